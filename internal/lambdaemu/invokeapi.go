package lambdaemu

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// Invocation types (X-Amz-Invocation-Type) and the log type Tail.
const (
	TypeRequestResponse = "RequestResponse"
	TypeEvent           = "Event"
	TypeDryRun          = "DryRun"
	logTypeTail         = "Tail"
	latest              = "$LATEST"
)

// Payload limits of the Invoke API.
const (
	maxSyncPayload  = 6 * 1024 * 1024
	maxEventPayload = 1024 * 1024
)

func (e *Emulator) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", e.handleInvoke)
	mux.HandleFunc("GET /2015-03-31/functions/{name}", e.handleGetFunction)
	mux.HandleFunc("GET /2015-03-31/functions/{name}/configuration", e.handleGetConfiguration)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "UnknownOperationException", map[string]any{
			"Type": "User", "Message": fmt.Sprintf("the Lambda emulator does not implement %s %s", r.Method, r.URL.Path),
		})
	})
	return mux
}

// apiError is an Invoke API error answer.
type apiError struct {
	status int
	typ    string
	body   map[string]any
}

func (a *apiError) write(w http.ResponseWriter) { writeError(w, a.status, a.typ, a.body) }

// writeError writes an AWS REST-JSON error: the type in X-Amzn-ErrorType
// (which the AWS SDKs read first) and a JSON body shaped as Lambda's.
func writeError(w http.ResponseWriter, status int, typ string, body map[string]any) {
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func userError(status int, typ, msg string) *apiError {
	return &apiError{status: status, typ: typ, body: map[string]any{"Type": "User", "Message": msg}}
}

// resolve finds the function a FunctionName path value names: a name, a
// name:qualifier, a partial ARN (ACCOUNT:function:NAME[:QUALIFIER]) or a full
// ARN, together with the Qualifier query parameter.
func (e *Emulator) resolve(raw, queryQualifier string) (*function, string, *apiError) {
	parts := strings.Split(raw, ":")
	var name, qualifier, region string
	switch {
	case parts[0] == "arn" && (len(parts) == 7 || len(parts) == 8) && parts[2] == "lambda" && parts[5] == "function":
		region, name = parts[3], parts[6]
		if len(parts) == 8 {
			qualifier = parts[7]
		}
	case len(parts) >= 3 && len(parts) <= 4 && parts[1] == "function":
		name = parts[2]
		if len(parts) == 4 {
			qualifier = parts[3]
		}
	case len(parts) <= 2:
		name = parts[0]
		if len(parts) == 2 {
			qualifier = parts[1]
		}
	default:
		return nil, "", userError(http.StatusBadRequest, "InvalidParameterValueException",
			fmt.Sprintf("1 validation error detected: Value '%s' at 'functionName' failed to satisfy constraint: not a function name or ARN", raw))
	}
	if queryQualifier != "" {
		if qualifier != "" && qualifier != queryQualifier {
			return nil, "", userError(http.StatusBadRequest, "InvalidParameterValueException",
				"The derived qualifier from the function name does not match the specified qualifier.")
		}
		qualifier = queryQualifier
	}
	arn := e.FunctionARN(name)
	if qualifier != "" {
		arn += ":" + qualifier
	}
	notFound := userError(http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+arn)
	f, ok := e.funcs[name]
	if !ok || (region != "" && region != e.opts.Region) {
		return nil, "", notFound
	}
	if qualifier != "" && qualifier != latest && !slices.Contains(f.cfg.Aliases, qualifier) {
		return nil, "", notFound
	}
	return f, qualifier, nil
}

func (e *Emulator) handleInvoke(w http.ResponseWriter, r *http.Request) {
	f, qualifier, aerr := e.resolve(r.PathValue("name"), r.URL.Query().Get("Qualifier"))
	if aerr != nil {
		aerr.write(w)
		return
	}
	typ := r.Header.Get("X-Amz-Invocation-Type")
	if typ == "" {
		typ = TypeRequestResponse
	}
	limit := maxSyncPayload
	switch typ {
	case TypeRequestResponse, TypeDryRun:
	case TypeEvent:
		limit = maxEventPayload
	default:
		userError(http.StatusBadRequest, "InvalidParameterValueException",
			fmt.Sprintf("1 validation error detected: Value '%s' at 'invocationType' failed to satisfy constraint: Member must satisfy enum value set: [Event, RequestResponse, DryRun]", typ)).write(w)
		return
	}
	payload, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		userError(http.StatusBadRequest, "InvalidRequestContentException", "could not read the request body: "+err.Error()).write(w)
		return
	}
	if len(payload) > limit {
		userError(http.StatusRequestEntityTooLarge, "RequestTooLargeException",
			fmt.Sprintf("Request must be smaller than %d bytes for the %s invocation type.", limit, typ)).write(w)
		return
	}
	if len(strings.TrimSpace(string(payload))) == 0 {
		payload = []byte("{}")
	}
	if !json.Valid(payload) {
		userError(http.StatusBadRequest, "InvalidRequestContentException", "Could not parse request body into json: the payload is not valid JSON").write(w)
		return
	}
	reqID := newRequestID()
	w.Header().Set("X-Amzn-Requestid", reqID)
	arn := f.arn
	if qualifier != "" {
		arn += ":" + qualifier
	}
	inv := newInvocation(reqID, typ, qualifier, arn, payload, r.Header.Get("X-Amz-Log-Type") == logTypeTail)

	switch typ {
	case TypeDryRun:
		w.WriteHeader(http.StatusNoContent)
		return
	case TypeEvent:
		if err := f.enqueue(inv); err != nil {
			writeThrottled(w, err)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}

	if err := f.acquire(r.Context(), true); err != nil {
		writeThrottled(w, err)
		return
	}
	res := f.invoke(inv)
	f.release()
	if res.stopping {
		writeError(w, http.StatusInternalServerError, "ServiceException", map[string]any{"Type": "Service", "Message": errStopping.Error()})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Amz-Executed-Version", latest)
	if res.functionError != "" {
		h.Set("X-Amz-Function-Error", res.functionError)
	}
	if inv.tail {
		h.Set("X-Amz-Log-Result", base64.StdEncoding.EncodeToString([]byte(res.log)))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(res.payload)
}

// writeThrottled answers an invocation that found no slot.
func writeThrottled(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, errThrottled):
		writeError(w, http.StatusTooManyRequests, "TooManyRequestsException", map[string]any{
			"Type": "User", "message": "Rate Exceeded.", "Reason": "ReservedFunctionConcurrentInvocationLimitExceeded",
		})
	case errors.Is(err, errStopping):
		writeError(w, http.StatusInternalServerError, "ServiceException", map[string]any{"Type": "Service", "Message": err.Error()})
	default: // the caller went away while queued
		writeError(w, http.StatusInternalServerError, "ServiceException", map[string]any{"Type": "Service", "Message": err.Error()})
	}
}

// configuration is the FunctionConfiguration shape of GetFunction.
func (f *function) configuration(qualifier string) map[string]any {
	arn := f.arn
	if qualifier != "" {
		arn += ":" + qualifier
	}
	return map[string]any{
		"FunctionName":     f.cfg.Name,
		"FunctionArn":      arn,
		"Runtime":          "provided.al2023",
		"Handler":          "bootstrap",
		"Timeout":          int(f.cfg.Timeout.Seconds() + 0.999),
		"MemorySize":       f.cfg.MemorySize,
		"Version":          latest,
		"State":            "Active",
		"LastUpdateStatus": "Successful",
		"PackageType":      "Zip",
		"Architectures":    []string{hostArch()},
	}
}

func (e *Emulator) handleGetFunction(w http.ResponseWriter, r *http.Request) {
	f, qualifier, aerr := e.resolve(r.PathValue("name"), r.URL.Query().Get("Qualifier"))
	if aerr != nil {
		aerr.write(w)
		return
	}
	writeJSON(w, map[string]any{
		"Configuration": f.configuration(qualifier),
		"Code":          map[string]any{"RepositoryType": "S3", "Location": "file://" + f.cfg.Path},
	})
}

func (e *Emulator) handleGetConfiguration(w http.ResponseWriter, r *http.Request) {
	f, qualifier, aerr := e.resolve(r.PathValue("name"), r.URL.Query().Get("Qualifier"))
	if aerr != nil {
		aerr.write(w)
		return
	}
	writeJSON(w, f.configuration(qualifier))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
