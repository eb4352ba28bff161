package source

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// AMD's key distribution service, and the variable that points alp at a
// stand-in (alp devnet).
const (
	MainnetKDSURL = "https://kdsintf.amd.com"
	KDSURLEnv     = "ALP_KDS_URL"
	KDSLabel      = "per AMD KDS"
)

// KDSProducts are the SEV-SNP product lines KDS serves VCEKs for, in the
// order they are asked: a chip id does not say which line it belongs to,
// and KDS answers 404 under the wrong one.
var KDSProducts = []string{"Milan", "Genoa", "Turin"}

// The VCEK certificate extensions read (AMD's "Versioned Chip Endorsement
// Key (VCEK) Certificate and KDS Interface Specification").
var (
	oidVCEKHwID    = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 3704, 1, 4}
	oidVCEKProduct = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 3704, 1, 2}
)

// maxVCEK caps a certificate body; a VCEK is about 1.3 KiB.
const maxVCEK = 64 << 10

// KDS asks AMD's key distribution service whether it knows a chip: it
// serves a VCEK certificate only for a CHIP_ID AMD manufactured.
type KDS struct{ c client }

// NewKDS returns a client of KDS at base; hc nil means http.DefaultClient.
func NewKDS(base string, hc *http.Client) *KDS { return &KDS{c: newClient(base, hc)} }

// Verdict is what KDS says of one chip. Exactly one of Verified, Refused
// and Inconclusive holds.
type Verdict struct {
	// Verified: KDS served a VCEK for the chip under Product
	// (the certificate's product name, e.g. "Milan-B0").
	Verified bool   `json:"verified,omitempty"`
	Product  string `json:"product,omitempty"`
	// Refused: every product line answered 404 — AMD does not know it.
	Refused bool `json:"refused,omitempty"`
	// Inconclusive: rate limited (429), a transport error or an answer that
	// could not be read; Reason says which. Asking again later may settle it.
	Inconclusive bool   `json:"inconclusive,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

// errOtherChip is a VCEK whose hardware id is not the chip asked about.
var errOtherChip = errors.New("VCEK names another chip")

// Verify asks each product line in turn for the chip's VCEK. The first
// certificate that names the chip settles it. A certificate that names
// another chip is a refusal: AMD answered, and what it vouches for is not
// this chip. 404 from every line is a refusal too; anything else (429,
// 5xx, a timeout, a certificate that cannot be read) leaves it
// inconclusive, since none of those is AMD saying no.
func (k *KDS) Verify(ctx context.Context, chip []byte) Verdict {
	var reasons []string
	for _, product := range KDSProducts {
		der, status, err := k.vcek(ctx, product, chip)
		switch {
		case err != nil:
			reasons = append(reasons, fmt.Sprintf("%s: %v", product, err))
		case status == http.StatusNotFound:
			continue
		case status == http.StatusOK:
			name, err := readVCEK(der, chip)
			if errors.Is(err, errOtherChip) {
				return Verdict{Refused: true, Reason: fmt.Sprintf("the %s certificate KDS served names another chip", product)}
			}
			if err != nil {
				reasons = append(reasons, fmt.Sprintf("%s: %v", product, err))
				continue
			}
			return Verdict{Verified: true, Product: name}
		default:
			reasons = append(reasons, fmt.Sprintf("%s: HTTP %d", product, status))
		}
	}
	if len(reasons) == 0 {
		return Verdict{Refused: true, Reason: "no product line knows the chip"}
	}
	return Verdict{Inconclusive: true, Reason: strings.Join(reasons, "; ")}
}

// vcek GETs one product line's VCEK for chip at the lowest TCB levels (the
// certificate exists for every chip AMD made, whatever its firmware).
func (k *KDS) vcek(ctx context.Context, product string, chip []byte) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, k.c.timeout)
	defer cancel()
	u := fmt.Sprintf("%s/vcek/v1/%s/%s?blSPL=0&teeSPL=0&snpSPL=0&ucodeSPL=0", k.c.base, product, hex.EncodeToString(chip))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := k.c.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxVCEK))
	if err != nil {
		return nil, 0, fmt.Errorf("read VCEK: %w", err)
	}
	return body, resp.StatusCode, nil
}

// readVCEK parses a DER VCEK, checks that its hardware id extension is
// chip and returns its product name.
func readVCEK(der, chip []byte) (string, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return "", fmt.Errorf("parse VCEK: %w", err)
	}
	var hwid []byte
	var product string
	for _, ext := range cert.Extensions {
		switch {
		case ext.Id.Equal(oidVCEKHwID):
			hwid = ext.Value
			// The hwID is an OCTET STRING; accept the raw bytes too.
			var inner []byte
			if rest, err := asn1.Unmarshal(ext.Value, &inner); err == nil && len(rest) == 0 {
				hwid = inner
			}
		case ext.Id.Equal(oidVCEKProduct):
			var s string
			if _, err := asn1.UnmarshalWithParams(ext.Value, &s, "ia5"); err != nil {
				product = strings.TrimSpace(string(ext.Value))
			} else {
				product = s
			}
		}
	}
	if hwid == nil {
		return "", errors.New("VCEK has no hardware id extension")
	}
	if !bytes.Equal(hwid, chip) {
		return "", errOtherChip
	}
	if product == "" {
		return "", errors.New("VCEK has no product name extension")
	}
	return product, nil
}
