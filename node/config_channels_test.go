package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestChannelsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           []string
	}{
		{"both", "log:", "channel: channel.yaml\nchannels: [channel.yaml, b.yaml]\nlog:", []string{"channels = [", "not both"}},
		{"same file twice", "log:", "channels: [channel.yaml, ./channel.yaml]\nlog:", []string{"channels[1] = \"", "channels[0] is the same file"}},
		{"empty path", "log:", "channels: [channel.yaml, \"\"]\nlog:", []string{"channels[1] = \"\": want a path"}},
		{"orderer join", "role: peer", "role: orderer\njoin: update.json", []string{"update.json\": want empty with channels"}},
		{"memnode", "log:", "stateDB: {backend: memnode}\nlog:", []string{"stateDB.backend = \"memnode\": want a local backend with several channels"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := strings.Replace(nodeYAML, "log:", "channels: [channel.yaml, b.yaml]\nlog:", 1)
			if tc.name == "both" || tc.name == "same file twice" || tc.name == "empty path" {
				node = nodeYAML
			}
			dir := writeNet(t, channelYAML, strings.Replace(node, tc.from, tc.to, 1))
			_, err := LoadNode(filepath.Join(dir, "node.yaml"))
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err %v, want ErrConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestLoadChannels: channels are read in the config's order, two files
// that define the same channel are refused by name, and each channel's
// ledger has a directory of its own under dataDir (a single-channel
// node's stays in dataDir, whose blocks/ a multi-channel node refuses).
func TestLoadChannels(t *testing.T) {
	dir := writeNet(t, channelYAML, strings.Replace(nodeYAML, "log:", "channels: [channel.yaml, b.yaml]\nlog:", 1))
	write(t, filepath.Join(dir, "b.yaml"), []byte(strings.Replace(channelYAML, "channel: demo", "channel: other", 1)))
	n, err := LoadNode(filepath.Join(dir, "node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	chs, err := n.LoadChannels()
	if err != nil {
		t.Fatal(err)
	}
	if len(chs) != 2 || chs[0].Channel != "demo" || chs[1].Channel != "other" {
		t.Fatalf("channels %v, want demo and other", chs)
	}
	for _, ch := range chs {
		if err := n.CheckChannel(ch); err != nil {
			t.Errorf("CheckChannel(%s): %v", ch.Channel, err)
		}
	}
	if got, want := n.forChannel(n.Channels[1], "other").DataDir, filepath.Join(n.DataDir, "channels", "other"); got != want {
		t.Errorf("data dir of channel other %s, want %s", got, want)
	}
	if err := n.checkLayout(chs); err != nil {
		t.Errorf("checkLayout of a fresh data dir: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(n.DataDir, "blocks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := n.checkLayout(chs); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "into channels/demo/") {
		t.Errorf("checkLayout of a single-channel data dir: %v", err)
	}

	write(t, filepath.Join(dir, "b.yaml"), []byte(channelYAML))
	if _, err := n.LoadChannels(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `both define channel "demo"`) {
		t.Errorf("two files of channel demo: %v", err)
	}

	one, err := LoadNode(filepath.Join(writeNet(t, channelYAML, nodeYAML), "node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := one.forChannel(one.Channel, "demo").DataDir; got != one.DataDir {
		t.Errorf("data dir of a single-channel node's channel %s, want %s (the layout before channels)", got, one.DataDir)
	}
}
