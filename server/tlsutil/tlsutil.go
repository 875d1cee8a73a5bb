// Package tlsutil creates ctlplane's certificates (as `consul tls` does) and
// builds the TLS configurations of Raft, the HTTPS API and the clients.
//
// Every server of datacenter dc carries the DNS name server.<dc>.ctlplane in
// its certificate; servers accept each other (on Raft, and for joining and
// forwarding over HTTPS) only with a certificate signed by the cluster's CA
// that carries that name.
package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Domain is the DNS domain of server and client certificates.
const Domain = "ctlplane"

// ServerName is the DNS name every server certificate of datacenter dc carries.
func ServerName(dc string) string { return "server." + dc + "." + Domain }

// Files names the PEM files of one agent.
type Files struct {
	CAFile   string
	CertFile string
	KeyFile  string
}

// Enabled says whether any file is set.
func (f Files) Enabled() bool { return f.CAFile != "" || f.CertFile != "" || f.KeyFile != "" }

// Bundle is a loaded CA pool and this agent's certificate.
type Bundle struct {
	CAs  *x509.CertPool
	Cert tls.Certificate
	// Datacenter is the agent's datacenter: peers must be server.<dc>.ctlplane.
	Datacenter string
}

// Load reads the CA and the agent's certificate and key; all three are
// required, and the certificate must be a server certificate of dc.
func Load(f Files, dc string) (*Bundle, error) {
	if f.CAFile == "" || f.CertFile == "" || f.KeyFile == "" {
		return nil, errors.New("TLS needs all of -tls-ca-file, -tls-cert-file and -tls-key-file")
	}
	caPEM, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, fmt.Errorf("failed to read the CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("the CA file %s holds no PEM certificate", f.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("failed to load the certificate and key: %w", err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("failed to parse the certificate %s: %w", f.CertFile, err)
	}
	if err := leaf.VerifyHostname(ServerName(dc)); err != nil {
		return nil, fmt.Errorf("the certificate %s is not a server certificate of datacenter %q (it lacks the name %s): create one with `ctlplane tls cert create -server -dc %s`", f.CertFile, dc, ServerName(dc), dc)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, fmt.Errorf("the certificate %s is not signed by the CA in %s: %w", f.CertFile, f.CAFile, err)
	}
	cert.Leaf = leaf
	return &Bundle{CAs: pool, Cert: cert, Datacenter: dc}, nil
}

// IsServer says whether a connection's peer presented a certificate, verified
// against the CA, of a server of datacenter dc.
func IsServer(cs *tls.ConnectionState, dc string) bool {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return false
	}
	return cs.PeerCertificates[0].VerifyHostname(ServerName(dc)) == nil
}

// verifyServerPeer refuses a connection unless the peer is a server of the datacenter.
func (b *Bundle) verifyServerPeer(cs tls.ConnectionState) error {
	if !IsServer(&cs, b.Datacenter) {
		return fmt.Errorf("peer certificate is not a server certificate of %s", ServerName(b.Datacenter))
	}
	return nil
}

// RaftServer is the listener side of Raft: a client certificate is required,
// verified against the CA, and must be a server's.
func (b *Bundle) RaftServer() *tls.Config {
	return &tls.Config{
		MinVersion:       tls.VersionTLS12,
		Certificates:     []tls.Certificate{b.Cert},
		ClientCAs:        b.CAs,
		ClientAuth:       tls.RequireAndVerifyClientCert,
		VerifyConnection: b.verifyServerPeer,
	}
}

// ServerClient is the dialing side between servers (Raft, joining,
// forwarding): the peer must be a server of the datacenter, and this
// server's certificate is the client certificate.
func (b *Bundle) ServerClient() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{b.Cert},
		RootCAs:      b.CAs,
		ServerName:   ServerName(b.Datacenter),
	}
}

// HTTPS is the API's TLS configuration: clients may present a certificate,
// which is then verified against the CA (servers present theirs to join and
// forward).
func (b *Bundle) HTTPS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{b.Cert},
		ClientCAs:    b.CAs,
		ClientAuth:   tls.VerifyClientCertIfGiven,
	}
}
