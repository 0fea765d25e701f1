# weft container image: build on Debian 12 with the project's own setup script, run on slim.
FROM debian:bookworm AS build
WORKDIR /src
COPY . .
RUN scripts/setup.sh && WEFT_WERROR=OFF cmake --preset release -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCH=OFF \
    && cmake --build --preset release -j"$(nproc)"

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends liburing2 libspdlog1.10 libfmt9 media-types \
    && rm -rf /var/lib/apt/lists/* && useradd --system --no-create-home --shell /usr/sbin/nologin weft
COPY --from=build /src/build/release/server/weft /usr/local/bin/weft
COPY conf/ /etc/weft/
COPY www-fixtures/site/ /srv/www/
USER weft
EXPOSE 8080
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/weft", "-c", "/etc/weft/weft.toml", "--root", "/srv/www", "--listen", "*:8080"]
