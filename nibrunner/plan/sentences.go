package plan

import "fmt"

// The sentences the host says in reported.json and in a wake's answer,
// where they are fixed words or built from a few facts, rather than from
// an instance's plan (InstanceStatus builds those).

// What a wake answers when it has no other word: the pass it waited for
// held the app's first start back and left no note, or its start
// committed without a guest up and no failure.
const (
	MsgNoSlotYet      = "its first start was held back and it has no slot yet; the next pass tries again"
	MsgWentDownWaking = "the guest went down while waking"
)

// Keeping says what the host does while it takes no new document: it runs
// nothing when it never accepted one, and otherwise keeps converging on
// the one it accepted (digest, its sha256 in hex).
func Keeping(digest string) string {
	if digest == "" {
		return "no document was accepted yet, so this host runs nothing"
	}
	short := digest
	if len(short) > 12 {
		short = short[:12]
	}
	return "the host keeps converging on the document it accepted before (sha256 " + short + "…)"
}

// NoDocument is the refusal of a reading that holds no document (the file
// is missing or unreadable): what the host does meanwhile, then why.
func NoDocument(keeping string, err error) string {
	return fmt.Sprintf("no document to take (%s): %v", keeping, err)
}

// Refused is the refusal of a document that does not decode: what the
// host does meanwhile, then the reasons.
func Refused(keeping, reasons string) string {
	return fmt.Sprintf("desired.json was refused (%s): %s", keeping, reasons)
}

// Unrecorded is the refusal of a document that decoded but could not be
// recorded: it is not taken until it is.
func Unrecorded(err error) string {
	return "desired.json could not be recorded, so it is not taken yet (it is tried again at every pass, and whenever the file is written): " + err.Error()
}

// HostMessage is the report's message, from what the document's source
// says of itself (problem) and why the last reading was refused
// (refusal): either alone when the other is "", else the source's first.
// When the source is why there is no document (noDocument: the object was
// deleted), its sentence says so and only what the host does meanwhile
// (keeping) follows, not the refusal, which would say it twice.
func HostMessage(problem, refusal string, noDocument bool, keeping string) string {
	switch {
	case problem == "":
		return refusal
	case refusal == "":
		return problem
	case noDocument:
		return problem + " (" + keeping + ")"
	}
	return problem + "; " + refusal
}
