# herald's container image: a static binary on a distroless, non-root base.
# make build produces the same binary outside Docker.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/herald ./cmd/herald

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/herald /herald
USER 65532:65532
ENTRYPOINT ["/herald"]
CMD ["run", "--config", "/etc/herald/config.yaml"]
