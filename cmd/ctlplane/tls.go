package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/ctlplane/ctlplane/server/tlsutil"
)

const tlsUsage = `Usage: ctlplane tls <ca|cert> create [flags]

  tls ca create [-days 1825] [-domain ctlplane]
      writes ctlplane-agent-ca.pem and ctlplane-agent-ca-key.pem
  tls cert create -server|-client [-dc dc1] [-ca FILE -key FILE]
                  [-additional-dnsname NAME]... [-additional-ipaddress IP]...
      writes <dc>-server-ctlplane-<n>.pem and <dc>-server-ctlplane-<n>-key.pem
      (or -client-); server certificates carry server.<dc>.ctlplane,
      localhost and 127.0.0.1

Files are written to the current directory with mode 0600; existing files
are never overwritten.
`

func runTLS(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || args[1] != "create" || (args[0] != "ca" && args[0] != "cert") {
		fmt.Fprint(stderr, tlsUsage)
		return 1
	}
	var err error
	if args[0] == "ca" {
		err = tlsCACreate(args[2:], stdout, stderr)
	} else {
		err = tlsCertCreate(args[2:], stdout, stderr)
	}
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) && err != errReported {
			fmt.Fprintln(stderr, "Error:", err)
		}
		return 1
	}
	return 0
}

// errReported: the flag package has already printed the problem.
var errReported = errors.New("reported")

func tlsCACreate(args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("tls ca create", flag.ContinueOnError)
	flags.SetOutput(stderr)
	days := flags.Int("days", 1825, "days the CA is valid")
	domain := flags.String("domain", tlsutil.Domain, "domain of the agents' certificate names")
	if err := flags.Parse(args); err != nil {
		return errReported
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", flags.Args())
	}
	certFile, keyFile := *domain+"-agent-ca.pem", *domain+"-agent-ca-key.pem"
	if err := refuseExisting(certFile, keyFile); err != nil {
		return err
	}
	pair, err := tlsutil.GenerateCA(tlsutil.CAOptions{Days: *days, Domain: *domain})
	if err != nil {
		return err
	}
	if err := writePair(pair, certFile, keyFile); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "==> Saved %s\n==> Saved %s\n", certFile, keyFile)
	return nil
}

func tlsCertCreate(args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("tls cert create", flag.ContinueOnError)
	flags.SetOutput(stderr)
	server := flags.Bool("server", false, "create a server certificate")
	client := flags.Bool("client", false, "create a client certificate")
	dc := flags.String("dc", "dc1", "datacenter")
	domain := flags.String("domain", tlsutil.Domain, "domain of the certificate names")
	days := flags.Int("days", 365, "days the certificate is valid")
	caFile := flags.String("ca", "", "CA certificate (default <domain>-agent-ca.pem)")
	keyFile := flags.String("key", "", "CA key (default <domain>-agent-ca-key.pem)")
	var dnsNames, ipAddrs stringList
	flags.Var(&dnsNames, "additional-dnsname", "another DNS name for the certificate; repeatable")
	flags.Var(&ipAddrs, "additional-ipaddress", "another IP address for the certificate; repeatable")
	if err := flags.Parse(args); err != nil {
		return errReported
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", flags.Args())
	}
	if *server == *client {
		return errors.New("give exactly one of -server and -client")
	}
	if *caFile == "" {
		*caFile = *domain + "-agent-ca.pem"
	}
	if *keyFile == "" {
		*keyFile = *domain + "-agent-ca-key.pem"
	}
	var ips []net.IP
	for _, s := range ipAddrs {
		ip := net.ParseIP(s)
		if ip == nil {
			return fmt.Errorf("invalid -additional-ipaddress %q", s)
		}
		ips = append(ips, ip)
	}
	caPEM, err := os.ReadFile(*caFile)
	if err != nil {
		return fmt.Errorf("failed to read the CA certificate (create one with `ctlplane tls ca create`): %w", err)
	}
	caKey, err := os.ReadFile(*keyFile)
	if err != nil {
		return fmt.Errorf("failed to read the CA key: %w", err)
	}
	pair, err := tlsutil.GenerateCert(caPEM, caKey, tlsutil.CertOptions{
		Server: *server, Datacenter: *dc, Domain: *domain, Days: *days, DNSNames: dnsNames, IPs: ips,
	})
	if err != nil {
		return err
	}
	role := "client"
	if *server {
		role = "server"
	}
	// Like consul tls: the first free <dc>-<role>-<domain>-<n>.pem.
	for n := 0; ; n++ {
		base := fmt.Sprintf("%s-%s-%s-%d", *dc, role, *domain, n)
		certFile, keyOut := base+".pem", base+"-key.pem"
		if refuseExisting(certFile, keyOut) != nil {
			continue
		}
		if err := writePair(pair, certFile, keyOut); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "==> Using %s and %s\n==> Saved %s\n==> Saved %s\n", *caFile, *keyFile, certFile, keyOut)
		return nil
	}
}

func refuseExisting(files ...string) error {
	for _, f := range files {
		if _, err := os.Lstat(f); err == nil {
			return fmt.Errorf("%s already exists", f)
		}
	}
	return nil
}

// writePair writes both files with mode 0600, never replacing an existing one.
func writePair(p *tlsutil.PEMPair, certFile, keyFile string) error {
	if err := writeNew(certFile, p.Cert); err != nil {
		return err
	}
	if err := writeNew(keyFile, p.Key); err != nil {
		os.Remove(certFile)
		return err
	}
	return nil
}

func writeNew(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
