// Package xxlwire declares the XXL-JOB executor protocol once: the request
// and response bodies, handle codes, header names, paths and the messages
// both sides know. The server (service/, api/xxlapi), the HTTP target
// (targets/http), the executor SDK (executor/) and the functions SDK
// (functions/jobfn) all speak it through these types.
//
// XXL-JOB has three dialects (docs: xxl-job-reference.md §1). The types here
// read all of them and write a shape every admin and executor accepts:
//
//   - Envelope carries its payload under both "content" (2.x – 3.2) and
//     "data" (3.3+); Envelope.Payload reads whichever is set.
//   - CallbackItem and LogRequest carry the log date under both spellings,
//     "logDateTim" (2.x – 3.4) and "logDateTime" (3.5); readers take either.
//   - A callback body is a JSON array (2.x – 3.4) or {"callbackList":[...]}
//     (3.5); DecodeCallbacks reads both.
//   - A 3.5 executor is triggered on /trigger instead of /run and wants the
//     XXL-JOB-APPNAME header next to the access token (Protocol35).
//
// Every fire carries a trigger, its answer and a callback item, so those
// are written (TriggerRequest.AppendJSON) and, in their common forms, read
// (DecodeEnvelope, DecodeCallbacks) without reflection; the readers fall
// back to encoding/json for anything else and give what it gives.
//
// The package has no dependencies beyond the standard library, so the SDKs
// stay light.
package xxlwire
