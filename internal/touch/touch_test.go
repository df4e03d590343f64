package touch

import (
	"testing"
	"unsafe"
)

// TestWords: the sum covers the first word of every 64-byte line and the
// last word, and nothing else.
func TestWords(t *testing.T) {
	for _, words := range []int{1, 8, 12, 20, 21} {
		buf := make([]uint64, words)
		for i := range buf {
			buf[i] = 1 << i
		}
		var want uint64 = 1 << (words - 1)
		for i := 0; i < words; i += 8 {
			want += 1 << i
		}
		if got := Words(unsafe.Pointer(&buf[0]), uintptr(words*8)); got != want {
			t.Errorf("%d words: sum %#x, want %#x", words, got, want)
		}
	}
}
