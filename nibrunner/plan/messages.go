package plan

// The sentences the planner's status functions say, in one place.

// msgVolumeDetached is a volume on the host that no document names.
const msgVolumeDetached = "the document no longer names this volume; it is kept until a document asks for it absent"

// What a wake answers when it has no other word: the pass it waited for
// held the app's first start back and left no note, or its start
// committed without a guest up and no failure.
const (
	MsgNoSlotYet      = "its first start was held back and it has no slot yet; the next pass tries again"
	MsgWentDownWaking = "the guest went down while waking"
)
