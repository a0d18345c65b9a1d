package lambda_test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/ringjob/ringjob/internal/lambdaemu/emutest"
)

// deployLocalStack creates the test functions in LocalStack (built for
// linux on this machine's architecture, runtime provided.al2023) under a
// per-process prefix, with their aliases, and returns what deletes them.
func deployLocalStack(_ context.Context, b *backend, dir string) (func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.prefix = fmt.Sprintf("ringjob-test-%d-", os.Getpid())
	bins, err := emutest.BuildFor(filepath.Join(dir, "linux"), "linux", runtime.GOARCH)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	client := awslambda.NewFromConfig(aws.Config{Region: b.region, Credentials: staticCredentials(), HTTPClient: hc},
		func(o *awslambda.Options) { o.BaseEndpoint = aws.String(b.endpoint) })
	arch := types.ArchitectureX8664
	if runtime.GOARCH == "arm64" {
		arch = types.ArchitectureArm64
	}
	var created []string
	undeploy := func() {
		dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
		defer dcancel()
		for _, name := range created {
			_, _ = client.DeleteFunction(dctx, &awslambda.DeleteFunctionInput{FunctionName: aws.String(name)})
		}
		hc.CloseIdleConnections()
	}
	for _, f := range testFunctions(bins) {
		code, err := zipBootstrap(f.Path)
		if err != nil {
			undeploy()
			return nil, err
		}
		name := b.prefix + f.Name
		_, err = client.CreateFunction(ctx, &awslambda.CreateFunctionInput{
			FunctionName:  aws.String(name),
			Runtime:       types.RuntimeProvidedal2023,
			Handler:       aws.String("bootstrap"),
			Role:          aws.String("arn:aws:iam::000000000000:role/ringjob-test"),
			Code:          &types.FunctionCode{ZipFile: code},
			Timeout:       aws.Int32(int32(math.Ceil(f.Timeout.Seconds()))),
			Architectures: []types.Architecture{arch},
			Environment:   &types.Environment{Variables: f.Env},
		})
		if err != nil {
			undeploy()
			return nil, fmt.Errorf("create %s: %w", name, err)
		}
		created = append(created, name)
		if err := awslambda.NewFunctionActiveV2Waiter(client).Wait(ctx, &awslambda.GetFunctionInput{FunctionName: aws.String(name)}, 3*time.Minute); err != nil {
			undeploy()
			return nil, fmt.Errorf("wait for %s to be active: %w", name, err)
		}
		for _, alias := range f.Aliases {
			v, err := client.PublishVersion(ctx, &awslambda.PublishVersionInput{FunctionName: aws.String(name)})
			if err == nil {
				_, err = client.CreateAlias(ctx, &awslambda.CreateAliasInput{FunctionName: aws.String(name), Name: aws.String(alias), FunctionVersion: v.Version})
			}
			if err != nil {
				undeploy()
				return nil, fmt.Errorf("alias %s of %s: %w", alias, name, err)
			}
		}
	}
	return undeploy, nil
}

// zipBootstrap is a deployment package holding the binary as bootstrap.
func zipBootstrap(path string) ([]byte, error) {
	bin, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = w.Write(bin)
	}
	if err == nil {
		err = zw.Close()
	}
	return buf.Bytes(), err
}
