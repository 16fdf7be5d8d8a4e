#!/usr/bin/env bash
# Checks the Aliyun and Tencent SMS mocks' signature verification against the
# providers' official Python SDKs, through the real binary's `herald mock`:
#
#   scripts/ci/sms-sdk.sh path/to/herald
#
# The SDKs (alibabacloud-dysmsapi20170525, tencentcloud-sdk-python-sms and
# -common, pinned below) go into a venv kept between runs on one machine,
# installed from PyPI when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
HERALD_BIN=$(realpath "${1:?usage: scripts/ci/sms-sdk.sh HERALD_BINARY}")

ALIYUN_SDK=4.6.0
TENCENT_SDK=3.1.195
TENCENT_SMS_SDK=3.1.153
VENV="${HOME}/.cache/herald-sms-sdk-${ALIYUN_SDK}-${TENCENT_SDK}"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import alibabacloud_dysmsapi20170525, tencentcloud.sms' 2>/dev/null; then
    echo "== installing the SMS SDKs into $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet \
        "alibabacloud-dysmsapi20170525==${ALIYUN_SDK}" \
        "tencentcloud-sdk-python-common==${TENCENT_SDK}" \
        "tencentcloud-sdk-python-sms==${TENCENT_SMS_SDK}"
fi
"$VENV/bin/python" crates/herald-mock/sdk-tests/check_sms_signatures.py "$HERALD_BIN"
