# plan --generate appends to a copy of this file in the test.
