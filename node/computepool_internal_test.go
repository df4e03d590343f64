package node

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

func TestAdmitJoin(t *testing.T) {
	peer := &identity.Member{Org: "Org1", Role: identity.RolePeer, Name: "compute0.peer0.Org1"}
	for _, c := range []struct {
		name string
		req  *api.JoinRequest
		m    *identity.Member
		code codes.Code
		want string
	}{
		{"ok", &api.JoinRequest{Name: "compute0.peer0.Org1", Address: "127.0.0.1:7060"}, peer, codes.OK, ""},
		{"other org", &api.JoinRequest{Name: "compute0.peer0.Org2", Address: "127.0.0.1:7060"},
			&identity.Member{Org: "Org2", Role: identity.RolePeer, Name: "compute0.peer0.Org2"}, codes.PermissionDenied, "only a peer of org Org1"},
		{"client", &api.JoinRequest{Name: "user", Address: "127.0.0.1:7060"},
			&identity.Member{Org: "Org1", Role: identity.RoleClient, Name: "user"}, codes.PermissionDenied, "is client of org Org1"},
		{"other name", &api.JoinRequest{Name: "compute9", Address: "127.0.0.1:7060"}, peer, codes.InvalidArgument, `joins as "compute9" but its certificate names "compute0.peer0.Org1"`},
		{"bad address", &api.JoinRequest{Name: "compute0.peer0.Org1", Address: "nowhere"}, peer, codes.InvalidArgument, `joins with address "nowhere"; want host:port`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := admitJoin(c.req, c.m, "the caller", "Org1", "peer0.Org1")
			if st := status.Convert(err); st.Code() != c.code || !strings.Contains(st.Message(), c.want) {
				t.Fatalf("admitJoin: %v; want %v containing %q", err, c.code, c.want)
			}
		})
	}
}

// FuzzAdmitJoin: any Join request bytes either fail to decode or are
// judged without panicking, and one admitted names the caller and a valid
// host:port.
func FuzzAdmitJoin(f *testing.F) {
	for _, r := range []*api.JoinRequest{{Name: "compute0.peer0.Org1", Address: "127.0.0.1:7060"}, {Name: "x", Address: ":0"}, {}} {
		raw, _ := proto.Marshal(r)
		f.Add(raw)
	}
	peer := &identity.Member{Org: "Org1", Role: identity.RolePeer, Name: "compute0.peer0.Org1"}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req := new(api.JoinRequest)
		if proto.Unmarshal(raw, req) != nil {
			return
		}
		if admitJoin(req, peer, "fuzz", "Org1", "peer0.Org1") == nil && (req.Name != peer.Name || checkHostPort(req.Address) != "") {
			t.Fatalf("admitted %v", req)
		}
	})
}
