package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/store"
)

// secretRereadEvery bounds how often the password secret is read again
// (a burst of refused connections reads it once).
const secretRereadEvery = 5 * time.Second

// openDatabase opens the store; with database_password_secret_arn set, each
// new MySQL connection's password comes from that Secrets Manager secret,
// read again when the database refuses it (a rotation), so a rotated
// password needs no new deployment.
//
// database_tls_mode and database_tls_ca_file set how its connections are
// encrypted; an error caused by TLS says which of them to change.
func openDatabase(ctx context.Context, cfg *Config, log *logrus.Entry) (*store.Store, error) {
	var opts store.OpenOptions
	tc, err := databaseTLS(cfg)
	if err != nil {
		return nil, err
	}
	opts.TLS = tc
	if cfg.DatabasePasswordSecretARN != "" {
		src, err := newSecretPassword(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		opts.Password = src.password
	}
	st, err := store.OpenWith(ctx, cfg.DatabaseURL, opts)
	if err != nil {
		return nil, explainDatabaseTLS(cfg, err)
	}
	return st, nil
}

// secretPassword reads the database password from Secrets Manager: a JSON
// secret with a "password" key (what RDS manages) or a plain string.
type secretPassword struct {
	client *secretsmanager.Client
	arn    string
	log    *logrus.Entry

	mu     sync.Mutex
	cached string
	readAt time.Time
}

func newSecretPassword(ctx context.Context, cfg *Config, log *logrus.Entry) (*secretPassword, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("database_password_secret_arn: load AWS configuration: %w", err)
	}
	s := &secretPassword{client: secretsmanager.NewFromConfig(awsCfg), arn: cfg.DatabasePasswordSecretARN,
		log: log.WithField("component", "database-password")}
	// The password the platform injected at start (RINGJOB_DATABASE_PASSWORD)
	// is the first one tried; the secret is read when it is refused.
	if u, err := url.Parse(cfg.DatabaseURL); err == nil && u.User != nil {
		s.cached, _ = u.User.Password()
	}
	return s, nil
}

func (s *secretPassword) password(ctx context.Context, refresh bool) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cached != "" && (!refresh || time.Since(s.readAt) < secretRereadEvery) {
		return s.cached, nil
	}
	out, err := s.client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s.arn)})
	if err != nil {
		return "", fmt.Errorf("read secret %s: %w", s.arn, err)
	}
	pw := aws.ToString(out.SecretString)
	var j struct {
		Password string `json:"password"`
	}
	if json.Unmarshal([]byte(pw), &j) == nil && j.Password != "" {
		pw = j.Password
	}
	if pw == "" {
		return "", fmt.Errorf("secret %s holds no password (want a string or JSON with a \"password\" key)", s.arn)
	}
	if refresh {
		s.log.Info("the database refused its password; read it again from Secrets Manager (rotated)")
	}
	s.cached, s.readAt = pw, time.Now()
	return pw, nil
}
