#!/bin/sh
# `npm test` runs this first: the storage.fsync tests run the gateway under strace (the order of its
# system calls proves when it syncs) and never skip without it. Installs Debian's package when that
# needs no question (root or passwordless sudo, apt-get present, non-interactive); otherwise stops at
# once with the command to run.
command -v strace >/dev/null 2>&1 && exit 0

if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    sudo=''
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo='sudo -n'
  else
    echo 'npm test needs strace (the storage.fsync tests trace the gateway). Install it with:' >&2
    echo '  sudo apt-get install strace' >&2
    exit 1
  fi
  echo 'strace is missing: installing the strace package (apt-get)' >&2
  $sudo apt-get update -q &&
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends strace &&
    command -v strace >/dev/null 2>&1 && exit 0
  echo 'Installing strace failed (output above). Install it with:' >&2
  echo '  sudo apt-get install strace' >&2
  exit 1
fi

echo 'npm test needs strace (the storage.fsync tests trace the gateway; Linux only). Install it with' >&2
echo "  your system's strace package" >&2
exit 1
