# herald's container image: a static binary on a distroless, non-root base.
# `make image` builds the same image without Docker (an OCI image index
# for linux/amd64 and linux/arm64); internal/ociimage's tests hold the two
# to the same entrypoint, command, user and paths.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
ARG BUILD_DATE=unknown
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION} -X main.buildDate=${BUILD_DATE}" -o /out/herald ./cmd/herald

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
ARG BUILD_DATE=unknown
LABEL org.opencontainers.image.title="herald" \
      org.opencontainers.image.source="https://github.com/herald-k8s/herald" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.created="${BUILD_DATE}"
COPY --from=build /out/herald /herald
USER 65532:65532
ENTRYPOINT ["/herald"]
CMD ["run", "--config", "/etc/herald/config.yaml"]
