#!/bin/sh
# `npm test` runs this first: the console's browser tests (test/browser/) drive Debian's chromium
# through playwright-core and never skip without it. Installs the package when that needs no
# question (root or passwordless sudo, apt-get present, non-interactive); otherwise stops at once
# with the command to run. HOOKGATE_CHROMIUM names another binary (a Chrome or Chromium elsewhere).
if [ -n "${HOOKGATE_CHROMIUM:-}" ]; then
  [ -x "$HOOKGATE_CHROMIUM" ] && exit 0
  echo "HOOKGATE_CHROMIUM=$HOOKGATE_CHROMIUM is not an executable file" >&2
  exit 1
fi
command -v chromium >/dev/null 2>&1 && exit 0

if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    sudo=''
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo='sudo -n'
  else
    echo 'npm test needs chromium (the console browser tests drive it). Install it with:' >&2
    echo '  sudo apt-get install chromium' >&2
    exit 1
  fi
  echo 'chromium is missing: installing the chromium package (apt-get)' >&2
  $sudo apt-get update -q &&
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium &&
    command -v chromium >/dev/null 2>&1 && exit 0
  echo 'Installing chromium failed (output above). Install it with:' >&2
  echo '  sudo apt-get install chromium' >&2
  exit 1
fi

echo 'npm test needs chromium (the console browser tests drive it), or HOOKGATE_CHROMIUM naming one.' >&2
if [ "$(uname -s)" = Darwin ]; then
  echo '  brew install --cask chromium' >&2
else
  echo "  your system's chromium package" >&2
fi
exit 1
