// Command smallbank-external serves the Smallbank contract (package
// contracts/smallbank, the same code the peer has built in) as an
// external contract server, with the Go SDK (sdk/go/external):
//
//	go run ./examples/smallbank-external --listen 127.0.0.1:9999 \
//	    --cert server.pem --key server.key --client-ca Org1/ca.pem --client-ca Org2/ca.pem
//
// and deploy it with `strand contract deploy smallbankx --external
// 127.0.0.1:9999 --external-ca CA.pem` (docs/contracts.md).
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"strings"

	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/sdk/go/external"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	listen := flag.String("listen", "127.0.0.1:9999", "host:port to serve on")
	cert := flag.String("cert", "", "the server's TLS certificate (PEM); it must chain to the --external-ca of the deploy")
	key := flag.String("key", "", "its key (PEM)")
	var cas list
	flag.Var(&cas, "client-ca", "a CA whose peers may call (PEM; repeat it: the channel's org CAs)")
	flag.Parse()
	tlsConfig, err := external.ServerTLS(*cert, *key, cas...)
	if err != nil {
		log.Fatal(err)
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on %s\n", lis.Addr())
	log.Fatal(external.Serve(lis, smallbank.New(), tlsConfig))
}
