package proposal

import "alpnib.dev/alpage/kinds"

// Part is one row of a payload's field-by-field table (update_subnet's).
type Part = kinds.Part

// How is what the payload does to one part of the live record.
type How = kinds.How

// The ways a payload treats a part.
const (
	Changes   = kinds.Changes
	Keeps     = kinds.Keeps
	Inherits  = kinds.Inherits
	Resets    = kinds.Resets
	Untouched = kinds.Untouched
)
