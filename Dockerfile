# The image holding profdeck for the load-generator agents of
# `profdeck loadgen manifest` (docs/scale-out-kubernetes.md): one static
# binary (CGO_ENABLED=0) on distroless/static, run as its nonroot user,
# 65532, the user the manifest's pods run as. The manifest runs
# `profdeck loadgen-agent …`: profdeck is on the image's PATH, and is its
# entrypoint too, so `docker run IMAGE loadgen-agent …` runs the same.
#
#   docker build -t registry.example/profdeck:0.1 --build-arg VERSION=0.1 .
#   docker push registry.example/profdeck:0.1

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/profdeck .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/profdeck /usr/local/bin/profdeck
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/profdeck"]
