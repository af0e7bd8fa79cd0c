#!/usr/bin/env bash
# Headless Chromium and its WebDriver from Debian's packages, for the
# dashboard's browser test (tests/e2e/test_dashboard_browser.py). Safe to
# repeat: nothing is installed when both are there.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
echo "ensure-chromium: installing chromium and chromium-driver"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
  chromium chromium-driver >/dev/null
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  echo "ensure-chromium: /usr/bin/chromium or /usr/bin/chromedriver is still missing" >&2
  exit 1
fi
