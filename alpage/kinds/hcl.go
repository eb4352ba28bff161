package kinds

import (
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// Quote is s as an HCL quoted string (hclwrite escapes it, template
// sequences included).
func Quote(s string) string {
	return string(hclwrite.TokensForValue(cty.StringVal(s)).Bytes())
}
