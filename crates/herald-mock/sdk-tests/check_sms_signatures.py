#!/usr/bin/env python3
"""The SMS mocks' signature checks against the providers' official SDKs.

    check_sms_signatures.py path/to/herald

Starts `herald mock` (the real binary), points the official Python SDKs at
it (alibabacloud-dysmsapi20170525 signs V3 ACS3-HMAC-SHA256 by default;
tencentcloud-sdk-python signs TC3-HMAC-SHA256), through a recording relay
that forwards each request byte for byte, and checks that:

- the SDK's send is accepted (Aliyun `Code: OK`, Tencent `Ok` per number);
- the same signed request with one byte changed (a digit of the phone
  number in the query for Aliyun, in the JSON body for Tencent) is refused
  with the provider's own code (`SignatureDoesNotMatch`,
  `AuthFailure.SignatureFailure`);
- the Aliyun request replayed unchanged is refused for its used nonce
  (`SignatureNonceUsed`).

Exits non-zero on the first failed check. Needs the two SDKs installed
(scripts/ci/sms-sdk.sh makes a venv with them).
"""

import http.client
import http.server
import json
import subprocess
import sys
import threading
import urllib.parse

from alibabacloud_dysmsapi20170525 import models as dysms_models
from alibabacloud_dysmsapi20170525.client import Client as DysmsClient
from alibabacloud_tea_openapi import utils_models as open_api_models
from darabonba.runtime import RuntimeOptions
from tencentcloud.common import credential
from tencentcloud.common.profile.client_profile import ClientProfile
from tencentcloud.common.profile.http_profile import HttpProfile
from tencentcloud.sms.v20210111 import models as tc_models
from tencentcloud.sms.v20210111 import sms_client

# The mock's default credentials (herald_mock::{AliyunSmsConfig, TencentSmsConfig}).
ALIYUN_KEY_ID = "LTAImockaccesskeyid"
ALIYUN_SECRET = "mock-aliyun-access-key-secret"
TENCENT_ID = "AKIDmocksecretid"
TENCENT_KEY = "mock-tencent-secret-key"
TENCENT_APP = "1400000001"


def start_mock(binary):
    proc = subprocess.Popen(
        [binary, "mock", "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    for line in proc.stdout:
        if " listening on " in line:
            url = line.split(" listening on ", 1)[1].strip()
            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
            return proc, urllib.parse.urlparse(url)
    proc.kill()
    raise SystemExit("herald mock did not start")


class Relay:
    """Forwards requests to the mock unchanged (Host included, as signed) and
    keeps the last one, so it can be replayed with a byte changed."""

    def __init__(self, mock):
        self.mock = mock
        self.last = None
        relay = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                headers = [(k, v) for k, v in self.headers.items()]
                relay.last = (self.path, headers, body)
                status, answer_headers, answer = relay.send(self.path, headers, body)
                self.send_response(status)
                for k, v in answer_headers:
                    if k.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.endpoint = "127.0.0.1:%d" % self.server.server_address[1]

    def send(self, path, headers, body):
        conn = http.client.HTTPConnection(self.mock.hostname, self.mock.port, timeout=10)
        conn.putrequest("POST", path, skip_host=True, skip_accept_encoding=True)
        for k, v in headers:
            if k.lower() == "content-length":
                continue
            conn.putheader(k, v)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        out = (resp.status, resp.getheaders(), resp.read())
        conn.close()
        return out


def check(cond, what):
    if not cond:
        raise SystemExit("FAILED: " + what)
    print("ok   " + what)


def flip_digit(text, digit_run):
    """`text` with the last digit of the first occurrence of `digit_run` changed."""
    i = text.index(digit_run) + len(digit_run) - 1
    new = "0" if text[i] != "0" else "1"
    return text[:i] + new + text[i + 1:]


def aliyun(relay):
    config = open_api_models.Config(
        access_key_id=ALIYUN_KEY_ID,
        access_key_secret=ALIYUN_SECRET,
        endpoint=relay.endpoint,
        protocol="http",
    )
    client = DysmsClient(config)
    req = dysms_models.SendSmsRequest(
        phone_numbers="13800138000",
        sign_name="Herald",
        template_code="SMS_100001",
        template_param=json.dumps({"code": "1234"}),
    )
    resp = client.send_sms_with_options(req, RuntimeOptions())
    check(resp.body.code == "OK" and resp.body.biz_id, "aliyun: the official SDK's SendSms is accepted (%s)" % resp.body.code)

    path, headers, body = relay.last
    check(any(k.lower() == "authorization" and v.startswith("ACS3-HMAC-SHA256") for k, v in headers),
          "aliyun: the SDK signed with ACS3-HMAC-SHA256")
    status, _, answer = relay.send(flip_digit(path, "13800138000"), headers, body)
    code = json.loads(answer).get("Code")
    check(status == 400 and code == "SignatureDoesNotMatch",
          "aliyun: one changed byte in PhoneNumbers is refused (%d %s)" % (status, code))
    status, _, answer = relay.send(path, headers, body)
    code = json.loads(answer).get("Code")
    check(status == 400 and code == "SignatureNonceUsed",
          "aliyun: the request replayed unchanged is refused (%d %s)" % (status, code))


def tencent(relay):
    cred = credential.Credential(TENCENT_ID, TENCENT_KEY)
    http_profile = HttpProfile(endpoint=relay.endpoint, protocol="http", reqMethod="POST")
    client = sms_client.SmsClient(cred, "ap-guangzhou", ClientProfile(httpProfile=http_profile))
    req = tc_models.SendSmsRequest()
    req.PhoneNumberSet = ["+8613800138001", "+8613800138002"]
    req.SmsSdkAppId = TENCENT_APP
    req.SignName = "Herald"
    req.TemplateId = "100001"
    req.TemplateParamSet = ["1234"]
    resp = client.SendSms(req)
    codes = [s.Code for s in resp.SendStatusSet]
    check(codes == ["Ok", "Ok"], "tencent: the official SDK's SendSms is accepted (%s)" % codes)

    path, headers, body = relay.last
    check(any(k.lower() == "authorization" and v.startswith("TC3-HMAC-SHA256") for k, v in headers),
          "tencent: the SDK signed with TC3-HMAC-SHA256")
    changed = flip_digit(body.decode(), "8613800138001").encode()
    status, _, answer = relay.send(path, headers, changed)
    err = json.loads(answer)["Response"].get("Error", {})
    check(err.get("Code") == "AuthFailure.SignatureFailure",
          "tencent: one changed byte in the body is refused (%s)" % err.get("Code"))


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    proc, mock = start_mock(sys.argv[1])
    try:
        relay = Relay(mock)
        aliyun(relay)
        tencent(relay)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print("the SMS mocks agree with the official SDKs' signatures")


if __name__ == "__main__":
    main()
