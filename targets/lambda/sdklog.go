package lambda

import (
	"fmt"

	"github.com/aws/smithy-go/logging"
	"github.com/sirupsen/logrus"
)

// sdkLogger sends the AWS SDK's own log lines (retries, deprecations,
// checksum warnings) through the server's logger, so they come out in its
// format (JSON in production) instead of as bare text on stderr.
type sdkLogger struct{ log *logrus.Entry }

func (l sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	e := l.log.WithField("source", "aws-sdk")
	msg := fmt.Sprintf(format, v...)
	switch c {
	case logging.Warn:
		e.Warn(msg)
	default:
		e.Debug(msg)
	}
}
