package state

import (
	"fmt"
	"strings"
)

// MultiErrorText is the text Nomad's errors collected with go-multierror
// show (its default ListFormatFunc), for the refusals Nomad answers that
// way: "1 error occurred:\n\t* ...\n\n".
func MultiErrorText(lines []string) string {
	if len(lines) == 1 {
		return fmt.Sprintf("1 error occurred:\n\t* %s\n\n", lines[0])
	}
	points := make([]string, len(lines))
	for i, l := range lines {
		points[i] = "* " + l
	}
	return fmt.Sprintf("%d errors occurred:\n\t%s\n\n", len(lines), strings.Join(points, "\n\t"))
}
