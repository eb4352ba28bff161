# plan --generate appends to a copy of this file in the test.
# The devnet's identity controls neuron 4242.

provider {
  neuron = 4242
}
