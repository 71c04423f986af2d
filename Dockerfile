# An alternative to `cargo xtask image` for people who build with Docker (docs/images.md):
# the same static musl binary on a distroless non-root base. Not built by the project's CI.
#
#   docker build --build-arg BINARY=zerfoo-operator --build-arg PACKAGE=zerfoo-operator -t kinfer/zerfoo-operator .
#   docker build --build-arg BINARY=kinfer --build-arg PACKAGE=kinfer-cli -t kinfer/kinfer .

FROM rust:1.95-bookworm AS build
ARG BINARY=zerfoo-operator
ARG PACKAGE=zerfoo-operator
RUN apt-get update && apt-get install -y --no-install-recommends musl-tools \
    && rm -rf /var/lib/apt/lists/* \
    && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
ENV CC_x86_64_unknown_linux_musl=musl-gcc \
    RUSTFLAGS="-C target-feature=+crt-static --remap-path-prefix=/src=/kinfer"
RUN cargo build --release --locked --target x86_64-unknown-linux-musl -p "$PACKAGE" --bin "$BINARY" \
    && cp "target/x86_64-unknown-linux-musl/release/$BINARY" /binary

FROM gcr.io/distroless/static-debian12:nonroot
ARG BINARY=zerfoo-operator
COPY --from=build /binary /usr/local/bin/entrypoint
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/entrypoint"]
