# weft's container image. Two stages: build on Debian 12 with the project's own setup script,
# run on Debian 12 slim with only the libraries the binary links. Build and test it with
# scripts/container-test.sh; README's "Containers" section shows how to run it.
#
#   docker build -t weft .        (podman: podman build --format docker -t weft .)
#   docker run --rm -p 8080:8080 --security-opt seccomp=conf/seccomp-io_uring.json weft

FROM debian:bookworm AS build
WORKDIR /src
# The packages first, in their own layer: a source change does not reinstall them.
COPY scripts/setup.sh scripts/
RUN scripts/setup.sh --build-only
COPY CMakeLists.txt CMakePresets.json ./
COPY cmake/ cmake/
COPY runtime/ runtime/
COPY server/ server/
COPY loadgen/ loadgen/
RUN cmake --preset release -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCH=OFF \
    && cmake --build --preset release --target weft weft-load \
    && strip -o /weft build/release/server/weft \
    && strip -o /weft-load build/release/loadgen/weft-load

FROM debian:bookworm-slim
# Only what `ldd weft` lists beyond libc/libstdc++ (already in the base), and
# /etc/mime.types. The user has a fixed numeric id so Kubernetes' runAsNonRoot can verify it.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
       liburing2 libspdlog1.10 libfmt9 libtomlplusplus3 libssl3 media-types \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log \
    && groupadd --gid 10001 weft \
    && useradd --uid 10001 --gid weft --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin weft
COPY --from=build /weft /usr/local/bin/weft
# The load generator too, for fleets of it on a cluster (deploy/k8s/load/): same libraries.
COPY --from=build /weft-load /usr/local/bin/weft-load
COPY scripts/container-healthcheck.sh /usr/local/bin/weft-healthcheck
COPY conf/ /etc/weft/
COPY www-fixtures/site/ /srv/www/
VOLUME /srv/www
USER 10001:10001
EXPOSE 8080
# weft logs to stderr (errors, startup) and stdout (access log); see conf/weft-container.toml.
# SIGTERM: stop accepting, finish in-flight responses within timeouts.shutdown_grace, exit 0.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=3s --start-period=5s --retries=3 \
    CMD ["/usr/local/bin/weft-healthcheck", "8080", "/"]
ENTRYPOINT ["/usr/local/bin/weft", "-c", "/etc/weft/weft-container.toml"]
