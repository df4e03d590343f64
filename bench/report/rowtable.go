package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// writeRowTable writes a captioned table of rows under header as aligned
// text (nothing when there are no rows).
func writeRowTable(w io.Writer, caption string, header []string, rows [][]string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", caption)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, row := range append([][]string{header}, rows...) {
		fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
	}
	tw.Flush()
}

// rowTableHTML writes the same table as HTML, its id and class id, its
// first column (a round's label) aligned left.
func rowTableHTML(b *strings.Builder, id, caption string, header []string, rows [][]string) {
	fmt.Fprintf(b, `<table id="%s" class="%s"><caption>%s</caption><tr>`, esc(id), esc(id), esc(caption))
	for _, h := range header {
		fmt.Fprintf(b, "<th>%s</th>", esc(h))
	}
	b.WriteString("</tr>")
	for _, row := range rows {
		b.WriteString("<tr>")
		for i, c := range row {
			cls := ""
			if i == 0 {
				cls = ` class="l"`
			}
			fmt.Fprintf(b, "<td%s>%s</td>", cls, esc(c))
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table>")
}
