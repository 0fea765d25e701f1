#!/usr/bin/env bash
# The container test as one command: installs the container tools (podman, unless
# WEFT_CONTAINER_ENGINE=docker), pulls or makes the Debian base images, builds weft's image and
# runs tests/container/test_container.py against it. Fails, rather than skips, when no engine
# can run. About 5 minutes from a clean machine here (2 cores), under a minute once the image's
# layers are cached; see docs/containers.md.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${WEFT_CONTAINER_ENGINE:-podman}" == podman ]]; then
  scripts/setup.sh --with-containers
fi
scripts/container-base.sh
status=0
python3 -u tests/container/test_container.py || status=$?
if ((status == 77)); then
  echo "container-test: every check was skipped (see the reason above)" >&2
  exit 1
fi
exit $status
