#!/bin/sh
# `npm test` runs this first: the shared-state tests start their own redis-server and never skip
# without it. Installs Debian's package when that needs no question (root or passwordless sudo,
# apt-get present, non-interactive); otherwise stops at once with the command to run.
command -v redis-server >/dev/null 2>&1 && exit 0

if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    sudo=''
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo='sudo -n'
  else
    echo 'npm test needs redis-server (the shared-state tests start their own). Install it with:' >&2
    echo '  sudo apt-get install redis-server' >&2
    exit 1
  fi
  echo 'redis-server is missing: installing the redis-server package (apt-get)' >&2
  $sudo apt-get update -q &&
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server &&
    command -v redis-server >/dev/null 2>&1 && exit 0
  echo 'Installing redis-server failed (output above). Install it with:' >&2
  echo '  sudo apt-get install redis-server' >&2
  exit 1
fi

echo 'npm test needs redis-server (the shared-state tests start their own). Install it with:' >&2
if [ "$(uname -s)" = Darwin ]; then
  echo '  brew install redis' >&2
elif command -v dnf >/dev/null 2>&1; then
  echo '  sudo dnf install redis' >&2
else
  echo "  your system's redis package (it provides redis-server)" >&2
fi
exit 1
