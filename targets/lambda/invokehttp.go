package lambda

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// invoker calls Lambda's Invoke operation as one signed HTTP request. The
// SDK client's middleware stack (about twenty layers per call, each
// allocating) cost a fifth of the server's CPU per Lambda fire in the
// bench-e2e profile, on a hot path of one small REST call whose wire format
// is stable. The SDK still resolves the endpoint (partitions, FIPS, dual
// stack, a configured base endpoint), provides the credentials and signs;
// every other operation (GetFunction) goes through the SDK client.
type invoker struct {
	signer *v4.Signer

	mu        sync.Mutex
	endpoints map[string]regionEndpoint // by region
}

// regionEndpoint is what a region's Invoke calls share.
type regionEndpoint struct {
	base   *url.URL
	region string // the signing region
	creds  aws.CredentialsProvider
	http   aws.HTTPClient
}

// maxAnswer bounds what is read of an answer: Lambda's synchronous
// response payload is at most 6 MB.
const maxAnswer = 6<<20 + 64<<10

func newInvoker() *invoker {
	return &invoker{signer: v4.NewSigner(), endpoints: map[string]regionEndpoint{}}
}

// endpoint resolves a region's endpoint once, from the SDK client's own
// options (c is the region's client), so that it is the endpoint the
// client would call.
func (iv *invoker) endpoint(ctx context.Context, region string, c *awslambda.Client) (regionEndpoint, error) {
	iv.mu.Lock()
	ep, ok := iv.endpoints[region]
	iv.mu.Unlock()
	if ok {
		return ep, nil
	}
	o := c.Options()
	params := awslambda.EndpointParameters{
		Region:       aws.String(o.Region),
		Endpoint:     o.BaseEndpoint,
		UseFIPS:      aws.Bool(o.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled),
		UseDualStack: aws.Bool(o.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled),
	}
	resolver := o.EndpointResolverV2
	if resolver == nil {
		resolver = awslambda.NewDefaultEndpointResolverV2()
	}
	resolved, err := resolver.ResolveEndpoint(ctx, params)
	if err != nil {
		return regionEndpoint{}, fmt.Errorf("resolve the Lambda endpoint of region %q: %w", o.Region, err)
	}
	base := resolved.URI
	ep = regionEndpoint{base: &base, region: o.Region, creds: o.Credentials, http: o.HTTPClient}
	iv.mu.Lock()
	iv.endpoints[region] = ep
	iv.mu.Unlock()
	return ep, nil
}

// invoke sends one Invoke request and reads its answer into the SDK's
// output type. A Lambda error answer is an *invokeError; a missing function
// and throttling also unwrap to the SDK's exception types.
func (iv *invoker) invoke(ctx context.Context, region string, c *awslambda.Client, in *awslambda.InvokeInput) (*awslambda.InvokeOutput, string, error) {
	ep, err := iv.endpoint(ctx, region, c)
	if err != nil {
		return nil, "", err
	}
	u := *ep.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/2015-03-31/functions/" + aws.ToString(in.FunctionName) + "/invocations"
	if in.Qualifier != nil {
		u.RawQuery = url.Values{"Qualifier": {*in.Qualifier}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(in.Payload))
	if err != nil {
		return nil, "", fmt.Errorf("build the Invoke request: %w", err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Amz-Invocation-Type", string(in.InvocationType))
	if in.LogType != "" {
		req.Header.Set("X-Amz-Log-Type", string(in.LogType))
	}
	if ep.creds == nil {
		return nil, "", fmt.Errorf("sign the Invoke request: no AWS credentials are configured")
	}
	creds, err := ep.creds.Retrieve(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("sign the Invoke request: retrieve AWS credentials: %w", err)
	}
	sum := sha256.Sum256(in.Payload)
	if err := iv.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "lambda", ep.region, time.Now()); err != nil {
		return nil, "", fmt.Errorf("sign the Invoke request: %w", err)
	}
	resp, err := ep.http.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := readAnswer(resp)
	reqID := resp.Header.Get("X-Amzn-Requestid")
	if err != nil {
		return nil, reqID, fmt.Errorf("read the Invoke answer (request id %s): %w", reqID, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, reqID, newInvokeError(resp, body, reqID)
	}
	out := &awslambda.InvokeOutput{StatusCode: int32(resp.StatusCode), Payload: body}
	out.FunctionError = header(resp, "X-Amz-Function-Error")
	out.LogResult = header(resp, "X-Amz-Log-Result")
	out.ExecutedVersion = header(resp, "X-Amz-Executed-Version")
	return out, reqID, nil
}

// readAnswer reads an answer's body, in one allocation when its length is
// known.
func readAnswer(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= maxAnswer {
		body := make([]byte, n)
		_, err := io.ReadFull(resp.Body, body)
		return body, err
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
}

func header(resp *http.Response, name string) *string {
	if v := resp.Header.Get(name); v != "" {
		return aws.String(v)
	}
	return nil
}

// invokeError is an error answer of Invoke: the status, Lambda's error
// code (X-Amzn-ErrorType) and message.
type invokeError struct {
	status    int
	code      string
	message   string
	requestID string
	typed     error // the SDK's exception of the code, where one is matched
}

func (e *invokeError) Error() string {
	return fmt.Sprintf("Lambda Invoke answered %d (request id %s): %s: %s", e.status, e.requestID, e.code, e.message)
}

// HTTPStatusCode is the answer's status (retryAfter asks for it).
func (e *invokeError) HTTPStatusCode() int { return e.status }

func (e *invokeError) Unwrap() error { return e.typed }

func newInvokeError(resp *http.Response, body []byte, reqID string) *invokeError {
	code, _, _ := strings.Cut(resp.Header.Get("X-Amzn-ErrorType"), ":")
	var doc struct {
		Type              string `json:"Type"`
		Message           string `json:"message"`
		MessageUpper      string `json:"Message"`
		Reason            string `json:"Reason"`
		RetryAfterSeconds string `json:"retryAfterSeconds"`
	}
	_ = json.Unmarshal(body, &doc) // a body that is not JSON leaves the message empty
	msg := doc.Message
	if msg == "" {
		msg = doc.MessageUpper
	}
	if code == "" {
		code = http.StatusText(resp.StatusCode)
	}
	e := &invokeError{status: resp.StatusCode, code: code, message: msg, requestID: reqID}
	switch code {
	case "ResourceNotFoundException":
		e.typed = &types.ResourceNotFoundException{Message: aws.String(msg), Type: aws.String(doc.Type)}
	case "TooManyRequestsException":
		retry := resp.Header.Get("Retry-After")
		if retry == "" {
			retry = doc.RetryAfterSeconds
		}
		e.typed = &types.TooManyRequestsException{Message: aws.String(msg), Type: aws.String(doc.Type),
			Reason: types.ThrottleReason(doc.Reason), RetryAfterSeconds: aws.String(retry)}
	}
	return e
}
