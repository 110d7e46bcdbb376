# epochcast on Debian 12 (bookworm), from this tree, with nothing but Debian packages:
#   docker build -t epochcast . && docker run --rm -v "$PWD:/w" -w /w epochcast predict TRACE
# The build stage makes the .deb (cpack); the image installs it, so it is what `apt install
# ./epochcast_*.deb` gives on a host: the stripped binary, data under /usr/share/epochcast, completion.
FROM debian:bookworm AS build
COPY scripts/install-deps.sh /tmp/install-deps.sh
RUN /tmp/install-deps.sh build && apt-get install -y -q --no-install-recommends dpkg-dev file \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DEPOCHCAST_TESTS=OFF -DEPOCHCAST_BENCH=OFF \
    && cmake --build /build -j"$(nproc)" \
    && cd /build && cpack

FROM debian:bookworm
COPY --from=build /build/epochcast_*.deb /tmp/
RUN apt-get update -q && apt-get install -y -q --no-install-recommends /tmp/epochcast_*.deb \
    && rm -rf /var/lib/apt/lists/* /tmp/epochcast_*.deb \
    && epochcast --version
ENTRYPOINT ["epochcast"]
