// Package alarm tells people when a job fails after its last retry, and
// again when it recovers: by e-mail, a generic JSON webhook, Slack, DingTalk,
// WeCom (企业微信) or Feishu / Lark. Upstream XXL-JOB has e-mail only (its most
// repeated ask is more channels, docs/xxl-job-reference.md §10 item 2); the
// alarm states follow its alarm_status (§4.7).
//
// # Parts
//
// A Sender delivers one alarm over one channel in one attempt (Send is
// ctx-first and holds no goroutine). There is one per channel type:
//
//	email     net/smtp: STARTTLS when offered (or required, or implicit TLS on
//	          465), AUTH PLAIN only over TLS or to localhost, plain text body
//	          with an optional HTML alternative, recipients deduplicated
//	webhook   JSON POST of WebhookPayload (snake_case, RFC 3339 times), extra
//	          headers, optional X-Ringjob-Signature: sha256=HEX(HMAC(secret, body))
//	slack     incoming webhook, {"text": mrkdwn}
//	dingtalk  robot, {"msgtype":"markdown",...}; optional signing with
//	          timestamp and sign query parameters; errcode must be 0
//	wecom     group robot, {"msgtype":"markdown",...}; errcode must be 0
//	feishu    custom bot, {"msg_type":"text",...}; optional signing with
//	          timestamp and sign in the body; code (or StatusCode) must be 0
//
// A Dispatcher is the background service that makes alarms never block
// scheduling: Enqueue only puts the alarm in a bounded queue (a full queue
// drops the alarm with an error log and a count, never silently). One
// goroutine owns the queue and a retry timer on the injected clock and hands
// single attempts to a fixed set of workers. A failing channel is retried
// with exponential backoff (1s, 2s, 4s ... capped at 5m, with jitter) up to
// MaxAttempts times; an error marked Permanent (a 4xx, a refused recipient)
// ends it at once. Channels of one alarm are independent. When every channel
// has succeeded or given up, Options.Record gets the Result:
//
//	not_needed  the job names no channel          XXL-JOB alarm_status 1
//	sent        every channel delivered           XXL-JOB alarm_status 2
//	failed      at least one channel gave up      XXL-JOB alarm_status 3
//
// with every attempt (channel, start time, error). Claiming a run for
// alarming (XXL-JOB's 0 -> -1) is the caller's part.
//
// # Test alarms
//
// TestEvent is an alarm of kind test: "[Ringjob] TEST alarm (no job
// failed)", naming who sent it. Dispatcher.SendTest sends it through one
// channel at once, in one attempt, outside the queue (Enqueue refuses it), so
// that a person checking a channel sees its answer; Describe lists the
// channels with where they send, without secrets.
//
// # Configuration
//
// The server configuration declares channels by name under alarms; a job
// lists the names it alarms on. Build turns the section into senders:
//
//	alarms:
//	  max_attempts: 5         # per channel and alarm (default 5)
//	  backoff_base: 1s        # first retry wait (default 1s)
//	  backoff_max: 5m         # longest wait (default 5m)
//	  queue: 1000             # alarms waiting to start (default 1000)
//	  workers: 4              # attempts at once (default 4)
//	  attempt_timeout: 1m     # backstop per attempt (default 1m)
//	  stop_grace: 5s          # how long Stop drains (default 5s)
//	  channels:
//	    oncall-mail:
//	      type: email
//	      host: smtp.example.com
//	      port: 587           # default 587; 465 with implicit_tls
//	      username: ringjob
//	      password: "..."     # secret
//	      from: Ringjob <ringjob@example.com>
//	      to: [oncall@example.com, team@example.com]
//	      starttls: auto      # auto (default) | require | off
//	      implicit_tls: false
//	      ca_file: ""         # PEM roots for a private relay
//	      html: true          # add an HTML alternative
//	      timeout: 30s
//	    oncall-slack:
//	      type: slack
//	      url: https://hooks.slack.com/services/T000/B000/XXXX   # secret
//	    ops-dingtalk:
//	      type: dingtalk
//	      url: https://oapi.dingtalk.com/robot/send?access_token=XXXX  # secret
//	      secret: SECxxxx     # optional signing secret
//	    ops-wecom:
//	      type: wecom
//	      url: https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=XXXX  # secret
//	    ops-feishu:
//	      type: feishu
//	      url: https://open.feishu.cn/open-apis/bot/v2/hook/XXXX  # secret
//	      secret: xxxx        # optional signing secret
//	    pager:
//	      type: webhook
//	      url: https://events.example.com/ringjob   # treated as a secret
//	      headers: {Authorization: Bearer xxxx}     # values are secrets
//	      secret: xxxx        # optional body signature
//	      timeout: 10s        # every type; default 10s (e-mail 30s)
//
// A field the channel's type does not use is an error, and every Validate
// error names its field.
//
// # Secrets
//
// Webhook URLs carry tokens, so URLs, signing secrets, passwords and header
// values are secrets. They never appear whole in errors, logs or the output
// of fmt: every config and sender prints through Redacted (for any verb),
// which keeps a URL's scheme and host and the last four characters
// ("https://hooks.slack.com/…abcd"), and send errors are scrubbed of the
// URL, its tokens and the secrets.
//
// # Stopping
//
// Stop stops taking alarms, gives queued alarms one attempt and lets running
// attempts finish for up to StopGrace, but waits for no retry: channels
// still waiting give up with ErrStopped. Then it cancels what still runs.
// Every outcome is still recorded (failed when a channel gave up), so no run
// is left claimed; an outcome Record refuses is logged at error level with
// the run id.
package alarm
