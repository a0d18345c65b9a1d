package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/ringjob/ringjob/alarm"
	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/internal/kind"
)

// alarmChannelView is one alarm channel. Destination (where it sends, never
// a token or password) is shown to principals with system.read only; the
// name and kind are what a job's alarm_channels picks from.
type alarmChannelView struct {
	Name        string            `json:"name"`
	Kind        kind.AlarmChannel `json:"kind"`
	Destination *string           `json:"destination"`
}

func viewAlarmChannel(c alarm.ChannelInfo, showDestination bool) alarmChannelView {
	v := alarmChannelView{Name: c.Name, Kind: c.Kind}
	if showDestination {
		d := c.Destination
		v.Destination = &d
	}
	return v
}

func (s *server) listAlarmChannels(c *fiber.Ctx) error {
	show := principal(c).Can(access.PermSystemRead, 0)
	chans := s.svc.ListAlarmChannels()
	items := make([]alarmChannelView, 0, len(chans))
	for _, ch := range chans {
		items = append(items, viewAlarmChannel(ch, show))
	}
	return c.JSON(fiber.Map{"items": items})
}

// alarmTestView is how a test alarm went.
type alarmTestView struct {
	alarmChannelView
	Status string  `json:"status"` // "sent" or "failed"
	Error  *string `json:"error"`  // the channel's answer when it failed
	SentAt *string `json:"sent_at"`
	TookMs int64   `json:"took_ms"`
}

func (s *server) testAlarmChannel(c *fiber.Ctx) error {
	res, err := s.svc.TestAlarmChannel(c.UserContext(), c.Params("name"))
	if err != nil {
		return err
	}
	v := alarmTestView{alarmChannelView: viewAlarmChannel(res.Channel, true), Status: "sent", SentAt: rfc3339(res.AtMs), TookMs: res.Took.Milliseconds()}
	if !res.Sent {
		v.Status = "failed"
		v.Error = &res.Error
	}
	return c.JSON(v)
}
