// Command terraform-provider-ringjob is Ringjob's Terraform provider
// (package tfprovider). Terraform starts it; run by hand with -debug it
// serves in the foreground and prints the TF_REATTACH_PROVIDERS value that
// makes terraform use it.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/ringjob/ringjob/tfprovider"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

// Address is the provider's registry address, which configurations name
// in required_providers (source = "ringjob/ringjob").
const Address = "registry.terraform.io/ringjob/ringjob"

func main() {
	debug := flag.Bool("debug", false, "serve in the foreground for a debugger, printing the TF_REATTACH_PROVIDERS value to use")
	flag.Parse()
	err := providerserver.Serve(context.Background(), tfprovider.New(version), providerserver.ServeOpts{Address: Address, Debug: *debug})
	if err != nil {
		log.Fatal(err)
	}
}
