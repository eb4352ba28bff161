package idl

// The syntax tree of .did sources and of Candid text values. It stays inside
// the package: callers get candid.Type and candid.Value, which are what they
// compute with; the tree only lives between parsing and checking.

// typeExpr is a type as written.
type typeExpr interface{ at() Pos }

type primType struct {
	pos  Pos
	name string // nat, int8, text, reserved, principal, …
}

type namedType struct {
	pos  Pos
	name string
}

type optType struct {
	pos  Pos
	elem typeExpr
}

type vecType struct {
	pos  Pos
	elem typeExpr
}

type recordType struct {
	pos    Pos
	fields []fieldType
}

type variantType struct {
	pos    Pos
	fields []fieldType
}

type funcType struct {
	pos     Pos
	args    []argType
	results []argType
	modes   []string // query, oneway, composite_query as written
}

type serviceType struct {
	pos     Pos
	methods []methodType
}

func (t *primType) at() Pos    { return t.pos }
func (t *namedType) at() Pos   { return t.pos }
func (t *optType) at() Pos     { return t.pos }
func (t *vecType) at() Pos     { return t.pos }
func (t *recordType) at() Pos  { return t.pos }
func (t *variantType) at() Pos { return t.pos }
func (t *funcType) at() Pos    { return t.pos }
func (t *serviceType) at() Pos { return t.pos }

// label is a field id with the name it came from ("" for a number).
type label struct {
	id   uint32
	name string
	num  bool // written as a number (or implied by tuple position)
}

func (l label) String() string {
	if l.num {
		return uintString(l.id)
	}
	return l.name
}

type fieldType struct {
	pos   Pos
	label label
	typ   typeExpr
}

type argType struct {
	pos  Pos
	name string // documentation only; "" when unnamed
	typ  typeExpr
}

type methodType struct {
	pos  Pos
	name string
	typ  typeExpr // *funcType or *namedType
}

type typeDef struct {
	pos  Pos
	name string
	typ  typeExpr
	seq  int // order of definition across all files of a program
}

type importDecl struct {
	pos     Pos
	path    string
	service bool // `import service "…"` also merges the imported main service
}

type actorDecl struct {
	pos   Pos
	name  string
	class bool      // `service : (args) -> …`
	args  []argType // initialisation arguments of a class
	body  typeExpr  // *serviceType or *namedType
}

// fileAST is one parsed source file.
type fileAST struct {
	file    string
	defs    []typeDef
	imports []importDecl
	actor   *actorDecl
	tests   []testAST
}

// Values.

type valueExpr interface{ at() Pos }

type vNum struct {
	pos Pos
	raw string
}
type vText struct {
	pos   Pos
	bytes []byte
}
type vBool struct {
	pos Pos
	v   bool
}
type vNull struct{ pos Pos }
type vOpt struct {
	pos Pos
	v   valueExpr
}
type vVec struct {
	pos   Pos
	elems []valueExpr
}
type vBlob struct {
	pos   Pos
	bytes []byte
}
type vRecord struct {
	pos    Pos
	fields []vField
}
type vVariant struct {
	pos   Pos
	field vField
}
type vPrincipal struct {
	pos  Pos
	text string
}
type vService struct {
	pos  Pos
	text string
}
type vFunc struct {
	pos    Pos
	text   string
	method string
}
type vAnnot struct {
	pos Pos
	v   valueExpr
	typ typeExpr
}

type vField struct {
	pos   Pos
	label label
	v     valueExpr
}

func (v *vNum) at() Pos       { return v.pos }
func (v *vText) at() Pos      { return v.pos }
func (v *vBool) at() Pos      { return v.pos }
func (v *vNull) at() Pos      { return v.pos }
func (v *vOpt) at() Pos       { return v.pos }
func (v *vVec) at() Pos       { return v.pos }
func (v *vBlob) at() Pos      { return v.pos }
func (v *vRecord) at() Pos    { return v.pos }
func (v *vVariant) at() Pos   { return v.pos }
func (v *vPrincipal) at() Pos { return v.pos }
func (v *vService) at() Pos   { return v.pos }
func (v *vFunc) at() Pos      { return v.pos }
func (v *vAnnot) at() Pos     { return v.pos }

// Conformance tests (the .test.did grammar).

type testKind int

const (
	testAccept   testKind = iota // assert <input> : (types)
	testReject                   // assert <input> !: (types)
	testEqual                    // assert <input> == <input> : (types)
	testNotEqual                 // assert <input> != <input> : (types)
)

type testInput struct {
	pos   Pos
	blob  bool // binary Candid; otherwise Candid text
	bytes []byte
}

type testAST struct {
	pos   Pos
	kind  testKind
	left  testInput
	right testInput
	types []argType
	desc  string
}
