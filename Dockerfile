# syntax=docker/dockerfile:1
# Ringjob's image for people who build with Docker (docker buildx build
# --platform linux/amd64,linux/arm64 .). It is the image `make image` builds
# without a daemon (internal/imagebuild): same files, user, environment,
# entrypoint; internal/imagebuild's tests check the two agree.
# The database's CA bundle (make image DATABASE_CA_BUNDLE=...) is added by a
# one-line image on top of this one: see docs/deploy-aws.md.
ARG GO_VERSION=1.26
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -tags timetzdata -ldflags "-s -w -X main.version=${VERSION}" -o /out/ringjob ./cmd/ringjob
RUN mkdir -p /out/etc /out/home/ringjob /out/tmp \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nringjob:x:65532:65532:Ringjob:/home/ringjob:/sbin/nologin\n' > /out/etc/passwd \
 && printf 'root:x:0:\nringjob:x:65532:\n' > /out/etc/group \
 && chmod 700 /out/home/ringjob && chmod 1777 /out/tmp

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/etc/passwd /out/etc/group /etc/
COPY --from=build --chown=65532:65532 /out/home/ringjob /home/ringjob
COPY --from=build /out/tmp /tmp
COPY --from=build /out/ringjob /ringjob
ENV RINGJOB_LISTEN=0.0.0.0:8080 RINGJOB_LOG_FORMAT=json SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
WORKDIR /home/ringjob
EXPOSE 8080/tcp
STOPSIGNAL SIGTERM
ENTRYPOINT ["/ringjob"]
CMD ["server"]
