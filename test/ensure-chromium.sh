#!/bin/sh
# `npm test` runs this first: the console's browser tests (test/browser/) drive Debian's chromium
# through playwright-core and never skip without it. Installs the package when it can
# (apt-install.sh); otherwise names the command. HOOKGATE_CHROMIUM names another binary (a Chrome
# or Chromium elsewhere).
if [ -n "${HOOKGATE_CHROMIUM:-}" ]; then
  [ -x "$HOOKGATE_CHROMIUM" ] && exit 0
  echo "HOOKGATE_CHROMIUM=$HOOKGATE_CHROMIUM is not an executable file" >&2
  exit 1
fi
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/apt-install.sh"
apt_install chromium chromium 'the console browser tests drive it'
case $? in 0) exit 0 ;; 1) exit 1 ;; esac

echo 'npm test needs chromium (the console browser tests drive it), or HOOKGATE_CHROMIUM naming one.' >&2
if [ "$(uname -s)" = Darwin ]; then
  echo '  brew install --cask chromium' >&2
else
  echo "  your system's chromium package" >&2
fi
exit 1
