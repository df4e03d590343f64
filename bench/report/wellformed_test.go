package report

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// wellFormed fails t unless page parses as strict XML (every report page
// is well-formed XHTML-style markup) and returns the element name of each
// id attribute.
func wellFormed(t *testing.T, page string) map[string]string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(page))
	dec.Strict = true
	ids := map[string]string{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return ids
		}
		if err != nil {
			t.Fatalf("HTML not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			for _, a := range se.Attr {
				if a.Name.Local == "id" {
					ids[a.Value] = se.Name.Local
				}
			}
		}
	}
}
