// Package destinations delivers failure records (apitypes.FailureRecord) to
// where a job or group says: an SQS queue, an SNS topic, an EventBridge
// event bus, or a webhook. A destination is written as the resource's ARN,
// or as the webhook's URL. Delivery is one try; the scheduler's delivery
// service (scheduler/deliveries.go) keeps what is owed in the database and
// tries again until a try succeeds, so a record arrives at least once.
package destinations

import (
	"bytes"
	"context"

	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/ringjob/ringjob/internal/kind"
)

// MaxLength bounds a destination as stored (the column's size).
const MaxLength = 1024

// Destination is a parsed destination.
type Destination struct {
	Kind kind.Destination
	// Region, Account and Name come from an ARN (Name: the queue, the
	// topic, or the event bus).
	Region, Account, Name string
	// ARN is the destination as written, for SNS and EventBridge.
	ARN string
	// URL is a webhook's address.
	URL string
}

// How destinations are written, for error messages.
const forms = "an SQS queue (arn:aws:sqs:REGION:ACCOUNT:QUEUE), an SNS topic (arn:aws:sns:REGION:ACCOUNT:TOPIC), " +
	"an EventBridge bus (arn:aws:events:REGION:ACCOUNT:event-bus/NAME) or a webhook URL (https://...)"

// Parse reads a destination; the error says which forms are accepted.
func Parse(s string) (Destination, error) {
	s = strings.TrimSpace(s)
	if len(s) > MaxLength {
		return Destination{}, fmt.Errorf("is %d bytes long; at most %d", len(s), MaxLength)
	}
	if strings.HasPrefix(s, "arn:") {
		return parseARN(s)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return Destination{}, fmt.Errorf("%q is not a destination; use %s", s, forms)
	}
	if u.User != nil {
		return Destination{}, fmt.Errorf("%q carries credentials in its URL; put a token in its path or query instead", u.Redacted())
	}
	return Destination{Kind: kind.DestinationWebhook, URL: s}, nil
}

func parseARN(s string) (Destination, error) {
	p := strings.SplitN(s, ":", 6)
	if len(p) != 6 || p[1] == "" || p[3] == "" || p[4] == "" || p[5] == "" {
		return Destination{}, fmt.Errorf("%q is not a whole ARN (arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE); use %s", s, forms)
	}
	d := Destination{Region: p[3], Account: p[4], Name: p[5], ARN: s}
	switch p[2] {
	case "sqs":
		d.Kind = kind.DestinationSQS
	case "sns":
		d.Kind = kind.DestinationSNS
	case "events":
		name, ok := strings.CutPrefix(p[5], "event-bus/")
		if !ok || name == "" {
			return Destination{}, fmt.Errorf("%q is not an event bus; an EventBridge destination is arn:aws:events:REGION:ACCOUNT:event-bus/NAME", s)
		}
		d.Kind, d.Name = kind.DestinationEventBridge, name
	default:
		return Destination{}, fmt.Errorf("%q is an ARN of %s, which cannot be a failure destination; use %s", s, p[2], forms)
	}
	if strings.ContainsAny(d.Name, "/:") && d.Kind != kind.DestinationEventBridge {
		return Destination{}, fmt.Errorf("%q: %q is not a %s name", s, d.Name, d.Kind)
	}
	return d, nil
}

// Config builds a Sender.
type Config struct {
	// AWS is the SDK configuration (credentials, retries); each
	// destination's region comes from its ARN. Endpoints follow the SDK's
	// own settings (AWS_ENDPOINT_URL_SQS and the like).
	AWS aws.Config
	// HTTP sends to webhooks; it should enforce the server's outbound policy.
	HTTP *http.Client
}

// Sender delivers records. Safe for concurrent use.
type Sender struct {
	cfg Config

	mu     sync.Mutex
	sqs    map[string]*sqs.Client // by region
	sns    map[string]*sns.Client
	events map[string]*eventbridge.Client
	queues map[string]string // queue ARN -> URL
}

// NewSender returns a Sender.
func NewSender(cfg Config) *Sender {
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	return &Sender{cfg: cfg, sqs: map[string]*sqs.Client{}, sns: map[string]*sns.Client{}, events: map[string]*eventbridge.Client{}, queues: map[string]string{}}
}

// Deliver sends one record to the destination. id identifies the record
// (the same on every try), for destinations that deduplicate.
func (s *Sender) Deliver(ctx context.Context, destination string, record []byte, id string) error {
	d, err := Parse(destination)
	if err != nil {
		return fmt.Errorf("failure destination: %w", err)
	}
	switch d.Kind {
	case kind.DestinationSQS:
		return s.toSQS(ctx, d, record, id)
	case kind.DestinationSNS:
		return s.toSNS(ctx, d, record)
	case kind.DestinationEventBridge:
		return s.toEventBridge(ctx, d, record)
	default:
		return s.toWebhook(ctx, d, record, id)
	}
}

func (s *Sender) regional(region string) aws.Config {
	c := s.cfg.AWS.Copy()
	c.Region = region
	return c
}

func (s *Sender) toSQS(ctx context.Context, d Destination, record []byte, id string) error {
	s.mu.Lock()
	c, ok := s.sqs[d.Region]
	if !ok {
		c = sqs.NewFromConfig(s.regional(d.Region))
		s.sqs[d.Region] = c
	}
	queueURL := s.queues[d.ARN]
	s.mu.Unlock()
	if queueURL == "" {
		out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(d.Name), QueueOwnerAWSAccountId: aws.String(d.Account)})
		if err != nil {
			return fmt.Errorf("find SQS queue %s: %w", d.ARN, err)
		}
		queueURL = aws.ToString(out.QueueUrl)
		s.mu.Lock()
		s.queues[d.ARN] = queueURL
		s.mu.Unlock()
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(string(record))}
	if strings.HasSuffix(d.Name, ".fifo") {
		// A FIFO queue drops a repeat of the same record within five minutes.
		in.MessageGroupId, in.MessageDeduplicationId = aws.String("ringjob"), aws.String(id)
	}
	if _, err := c.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("send to SQS queue %s: %w", d.ARN, err)
	}
	return nil
}

func (s *Sender) toSNS(ctx context.Context, d Destination, record []byte) error {
	s.mu.Lock()
	c, ok := s.sns[d.Region]
	if !ok {
		c = sns.NewFromConfig(s.regional(d.Region))
		s.sns[d.Region] = c
	}
	s.mu.Unlock()
	if _, err := c.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(d.ARN), Message: aws.String(string(record)), Subject: aws.String("Ringjob run failed")}); err != nil {
		return fmt.Errorf("publish to SNS topic %s: %w", d.ARN, err)
	}
	return nil
}

// EventSource and EventDetailType are how failure records appear on an
// EventBridge bus (for rules that match them).
const (
	EventSource     = "ringjob"
	EventDetailType = "Ringjob Run Failed"
)

func (s *Sender) toEventBridge(ctx context.Context, d Destination, record []byte) error {
	s.mu.Lock()
	c, ok := s.events[d.Region]
	if !ok {
		c = eventbridge.NewFromConfig(s.regional(d.Region))
		s.events[d.Region] = c
	}
	s.mu.Unlock()
	out, err := c.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String(d.ARN), Source: aws.String(EventSource), DetailType: aws.String(EventDetailType), Detail: aws.String(string(record)),
	}}})
	if err != nil {
		return fmt.Errorf("put event on EventBridge bus %s: %w", d.ARN, err)
	}
	if out.FailedEntryCount > 0 {
		msg := "no reason given"
		if len(out.Entries) > 0 && out.Entries[0].ErrorCode != nil {
			msg = aws.ToString(out.Entries[0].ErrorCode) + ": " + aws.ToString(out.Entries[0].ErrorMessage)
		}
		return fmt.Errorf("put event on EventBridge bus %s: refused: %s", d.ARN, msg)
	}
	return nil
}

// errStatus is a webhook's answer that is not a success.
var errStatus = errors.New("webhook answered with a non-2xx status")

func (s *Sender) toWebhook(ctx context.Context, d Destination, record []byte, id string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(record))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", redact(d.URL), err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", id)
	resp, err := s.cfg.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", redact(d.URL), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook %s: %w: %d %s", redact(d.URL), errStatus, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// redact drops a webhook URL's path and query, where tokens live.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Scheme + "://" + u.Host
}
