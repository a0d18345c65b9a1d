// Package httptarget is the driver for http:// and https:// targets: HTTP
// executors that speak the XXL-JOB executor protocol (Java xxl-job-core 2.x to
// 3.5, the Go and Python clients, and Ringjob's own executor SDK).
//
// Run posts a TriggerParam to /run (or /trigger for groups that speak 3.5);
// the executor answers at once and reports the outcome later through the
// server's /api/callback, so a dispatch leaves the run running. Beat,
// IdleBeat, Kill and Log call /beat, /idleBeat, /kill and /log. Every request
// carries XXL-JOB-ACCESS-TOKEN (and XXL-JOB-APPNAME), and has a connect and a
// request timeout.
//
// XXL-JOB executors queue and dedupe per job id, and kill by job id: Kill
// stops the job's running trigger and drops its queued ones.
package httptarget
