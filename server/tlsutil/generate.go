package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// PEMPair is a certificate and its private key, PEM encoded.
type PEMPair struct {
	Cert []byte
	Key  []byte
}

// CAOptions configure a new CA.
type CAOptions struct {
	Days   int    // validity, default 1825
	Domain string // default "ctlplane"
}

// CertOptions configure a new server or client certificate.
type CertOptions struct {
	Server     bool // server (server.<dc>.<domain>) or client (client.<dc>.<domain>)
	Datacenter string
	Domain     string
	Days       int // validity, default 365
	DNSNames   []string
	IPs        []net.IP
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func encode(der []byte, key *ecdsa.PrivateKey) (*PEMPair, error) {
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &PEMPair{
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
	}, nil
}

// GenerateCA creates a self-signed CA with an ECDSA P-256 key.
func GenerateCA(o CAOptions) (*PEMPair, error) {
	if o.Days <= 0 {
		o.Days = 1825
	}
	if o.Domain == "" {
		o.Domain = Domain
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	ski := sha256.Sum256(pub)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("Ctlplane Agent CA %s", sn.Text(10)[:8]), Organization: []string{"ctlplane"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.AddDate(0, 0, o.Days),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		SubjectKeyId:          ski[:20],
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return encode(der, key)
}

// ParseCA decodes a CA certificate and key made by GenerateCA.
func ParseCA(certPEM, keyPEM []byte) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, nil, errors.New("the CA file holds no PEM certificate")
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to parse the CA certificate: %w", err)
	}
	if !ca.IsCA {
		return nil, nil, errors.New("the CA file's certificate is not a CA")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, errors.New("the CA key file holds no PEM key")
	}
	var key *ecdsa.PrivateKey
	if k, err := x509.ParseECPrivateKey(kb.Bytes); err == nil {
		key = k
	} else if pk, err2 := x509.ParsePKCS8PrivateKey(kb.Bytes); err2 == nil {
		k, ok := pk.(*ecdsa.PrivateKey)
		if !ok {
			return nil, nil, errors.New("the CA key is not an ECDSA key")
		}
		key = k
	} else {
		return nil, nil, fmt.Errorf("failed to parse the CA key: %w", err)
	}
	if !key.PublicKey.Equal(ca.PublicKey) {
		return nil, nil, errors.New("the CA key does not belong to the CA certificate")
	}
	return ca, key, nil
}

// GenerateCert creates a certificate signed by the CA. A server certificate
// carries server.<dc>.<domain>, localhost and 127.0.0.1; a client certificate
// client.<dc>.<domain> and localhost. Both may authenticate as client and
// server (servers dial each other).
func GenerateCert(caCertPEM, caKeyPEM []byte, o CertOptions) (*PEMPair, error) {
	ca, caKey, err := ParseCA(caCertPEM, caKeyPEM)
	if err != nil {
		return nil, err
	}
	if o.Datacenter == "" {
		o.Datacenter = "dc1"
	}
	if o.Domain == "" {
		o.Domain = Domain
	}
	if o.Days <= 0 {
		o.Days = 365
	}
	role := "client"
	if o.Server {
		role = "server"
	}
	name := role + "." + o.Datacenter + "." + o.Domain
	dns := append([]string{name, "localhost"}, o.DNSNames...)
	ips := o.IPs
	if o.Server {
		ips = append([]net.IP{net.IPv4(127, 0, 0, 1)}, ips...)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.AddDate(0, 0, o.Days),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:              dns,
		IPAddresses:           ips,
		AuthorityKeyId:        ca.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	return encode(der, key)
}
