"""colio.sink("s3://...") against moto's S3 on 127.0.0.1 (issue 18).

Every object is read back with boto3 and compared with the generator's
bytes; every failure case also lists the bucket's multipart uploads
(ListMultipartUploads) to show none was left open. Faults are injected
into the moto backend, which runs in this process (ThreadedMotoServer).
"""

import os
import random
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import CancelledError

import pytest

import colio

pytest.importorskip("moto")
pytest.importorskip("boto3")

BUCKET = "colio-sink"
MIB = 1 << 20
PART = 5 * MIB


def gen(n, seed):
    return random.Random(seed).randbytes(n)


@pytest.fixture(scope="module")
def s3():
    from conftest import moto_s3

    ep, key, secret, client, stop = moto_s3("colio-writer")
    client.create_bucket(Bucket=BUCKET)
    yield {"endpoint": ep, "key": key, "secret": secret, "boto3": client}
    stop()


def opts(s3, **extra):
    o = {"key": "moto", "secret": "moto", "endpoint_url": s3["endpoint"], "region": "us-east-1",
         "part_size": PART}
    o.update(extra)
    return o


def stored(s3, key):
    try:
        return s3["boto3"].get_object(Bucket=BUCKET, Key=key)["Body"].read()
    except s3["boto3"].exceptions.NoSuchKey:
        return None


def open_uploads(s3):
    return [u["Key"] for u in s3["boto3"].list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])]


def chunks(data, rng):
    """data in random chunks: the first third appended, the rest at their
    offsets in random order."""
    out, off = [], 0
    while off < len(data):
        n = min(rng.randint(1, 3 * MIB), len(data) - off)
        out.append((off, n))
        off += n
    k = len(out) // 3
    head, rest = out[:k], out[k:]
    rng.shuffle(rest)
    return [(None, o, n) for o, n in head] + [(o, o, n) for o, n in rest]


@pytest.mark.parametrize("size", [0, 1, 1000, PART - 1, PART, 3 * PART + 12345])
def test_random_chunks_read_back_with_boto3(s3, no_aws, size):
    data = gen(size, size)
    key = f"random/{size}"
    rng = random.Random(size)
    with colio.sink(f"s3://{BUCKET}/{key}", **opts(s3)) as k:
        futs = []
        for off, at, n in chunks(data, rng):
            f = k.write_async(memoryview(data)[at:at + n], off)
            futs.append((f, at, n))
        assert stored(s3, key) is None  # nothing is visible before close
    for f, at, n in futs:
        assert f.result(timeout=60) == n and f.offset == at
    assert stored(s3, key) == data
    assert key not in open_uploads(s3)


def test_write_returns_before_its_part_is_full(s3, no_aws):
    # A blocking write of a few bytes must not wait for the rest of its part.
    with colio.sink(f"s3://{BUCKET}/small-writes", **opts(s3)) as k:
        for i in range(100):
            assert k.write(b"%03d" % i) == 3
    assert stored(s3, "small-writes") == b"".join(b"%03d" % i for i in range(100))


def test_exception_in_with_aborts(s3, no_aws):
    old = gen(1000, 1)
    s3["boto3"].put_object(Bucket=BUCKET, Key="keep", Body=old)
    for key in ("keep", "absent"):
        with pytest.raises(RuntimeError):
            with colio.sink(f"s3://{BUCKET}/{key}", **opts(s3)) as k:
                k.write(gen(3 * PART, 2))
                k.flush()  # parts are uploaded: there is an upload to abort
                raise RuntimeError("boom")
        assert k.closed
    assert stored(s3, "keep") == old and stored(s3, "absent") is None
    assert open_uploads(s3) == []


def test_abort_and_repr(s3, no_aws):
    k = colio.sink(f"s3://{BUCKET}/aborted", **opts(s3, secret="moto"))
    assert "moto" not in repr(k).replace("key='***'", "") or "***" in repr(k)
    fut = k.write_async(gen(PART + 10, 3))
    k.abort()
    k.abort()  # idempotent
    with pytest.raises((colio.ColioError, CancelledError)):
        fut.result(timeout=60)  # its second part never became durable
    assert stored(s3, "aborted") is None and open_uploads(s3) == []
    with pytest.raises(TypeError):
        import pickle
        pickle.dumps(colio.sink(f"s3://{BUCKET}/x", **opts(s3)))


@pytest.fixture
def upload_part_fault(monkeypatch):
    """Makes moto's UploadPart fail: fault(part, times) for `times` calls."""
    from moto.s3.exceptions import S3ClientError
    from moto.s3.models import S3Backend

    real = S3Backend.upload_part
    plan = {}

    class Injected(S3ClientError):
        code = 500

        def __init__(self, status, code):
            self.code = status
            super().__init__(code, f"injected failure of the part (colio test)")

    def fake(self, bucket_name, multipart_id, part_id, value):
        left = plan.get(part_id)
        if left:
            plan[part_id] = left[0] - 1, *left[1:]
            if plan[part_id][0] <= 0:
                del plan[part_id]
            raise Injected(left[1], left[2])
        return real(self, bucket_name, multipart_id, part_id, value)

    monkeypatch.setattr(S3Backend, "upload_part", fake)
    return lambda part, times, status, code: plan.__setitem__(part, (times, status, code))


def test_rejected_part_aborts(s3, no_aws, upload_part_fault):
    upload_part_fault(2, 10**6, 400, "InvalidRequest")
    k = colio.sink(f"s3://{BUCKET}/rejected", **opts(s3))
    futs = [k.write_async(gen(3 * PART, 4))]
    with pytest.raises(colio.ColioError) as ei:
        k.close()
    assert "InvalidRequest" in str(ei.value) and "UploadPart 2" in str(ei.value)
    with pytest.raises(colio.ColioError):
        futs[0].result(timeout=60)
    assert stored(s3, "rejected") is None and open_uploads(s3) == []


def test_part_failing_once_is_retried(s3, no_aws, upload_part_fault):
    upload_part_fault(2, 1, 500, "InternalError")
    data = gen(3 * PART + 1, 5)
    with colio.sink(f"s3://{BUCKET}/retried", **opts(s3)) as k:
        k.write(data)
    assert stored(s3, "retried") == data and open_uploads(s3) == []


@pytest.fixture
def signed(s3, monkeypatch):
    """moto checks every request's SigV4 signature against its IAM keys."""
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin
    monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)
    monkeypatch.setattr(ActionAuthenticatorMixin, "request_count", 0)
    return s3


@pytest.mark.parametrize("size", [100, 2 * PART])
def test_wrong_credentials_are_a_permission_error(signed, no_aws, size):
    bad = "colio-wrong-secret-0123456789"
    k = colio.sink(f"s3://{BUCKET}/denied", **opts(signed, key=signed["key"], secret=bad))
    fut = k.write_async(gen(size, 6))
    with pytest.raises(PermissionError) as ei:
        k.close()
    assert isinstance(ei.value, colio.ColioError) and bad not in str(ei.value)
    assert "403" in str(ei.value) and f"s3://{BUCKET}/denied" in str(ei.value)
    with pytest.raises(PermissionError):
        fut.result(timeout=60)


def test_right_credentials_signed(signed, no_aws):
    data = gen(2 * PART + 3, 7)
    with colio.sink(f"s3://{BUCKET}/signed", **opts(signed, key=signed["key"],
                                                      secret=signed["secret"])) as k:
        k.write(data)
    import boto3
    ref = boto3.client("s3", endpoint_url=signed["endpoint"], aws_access_key_id=signed["key"],
                       aws_secret_access_key=signed["secret"], region_name="us-east-1")
    assert ref.get_object(Bucket=BUCKET, Key="signed")["Body"].read() == data


CHILD = textwrap.dedent("""
    import sys, colio
    url, ep = sys.argv[1], sys.argv[2]
    with colio.sink(url, key="moto", secret="moto", endpoint_url=ep, region="us-east-1",
                    part_size=5 << 20) as k:
        k.write(b"x" * (12 << 20))
        k.flush()
        print("parts sent", flush=True)
        sys.stdin.read()  # until killed
""")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_killed_child_leaves_no_object(s3, no_aws, tmp_path, sig):
    key = f"child-{int(sig)}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen([sys.executable, "-c", CHILD, f"s3://{BUCKET}/{key}", s3["endpoint"]],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        assert p.stdout.readline() == b"parts sent\n"
        p.send_signal(sig)
        p.wait(timeout=60)
    finally:
        p.kill()
        p.wait()
    assert stored(s3, key) is None
    if sig == signal.SIGINT:
        # KeyboardInterrupt inside the with block: the upload was aborted.
        assert key not in open_uploads(s3)
    else:
        # SIGKILL runs nothing: the upload stays open for the bucket's
        # lifecycle rule, but no object, old or half, was published.
        assert key in open_uploads(s3)
        up = [u for u in s3["boto3"].list_multipart_uploads(Bucket=BUCKET)["Uploads"]
              if u["Key"] == key]
        for u in up:
            s3["boto3"].abort_multipart_upload(Bucket=BUCKET, Key=key, UploadId=u["UploadId"])


def test_bad_options(s3, no_aws):
    with pytest.raises(colio.InvalidArgumentError, match="part_size"):
        colio.sink(f"s3://{BUCKET}/x", **opts(s3, part_size=1000))
    with pytest.raises(colio.InvalidArgumentError, match="headers"):
        colio.sink(f"s3://{BUCKET}/x", **opts(s3, headers={"a": "b"}))
    with pytest.raises(ValueError):
        colio.sink(f"s3://{BUCKET}/x", "a", **opts(s3))
    with pytest.raises(TypeError):
        colio.sink(os.devnull, anon=True)


def test_cp_to_s3(s3, no_aws, tmp_path, monkeypatch, upload_part_fault):
    from colio._cli_copy import copy
    from colio._cli_errors import CopyError

    data = gen(3 * PART + 777, 9)
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    dst_opts = {k: v for k, v in opts(s3).items()}
    assert copy(str(src), f"s3://{BUCKET}/cp/api", chunk=MIB, window=3, progress_bar=False,
                dst_options=dst_opts) == len(data)
    assert stored(s3, "cp/api") == data
    # The command line, with the destination's credentials from AWS's environment.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), AWS_ACCESS_KEY_ID="moto",
               AWS_SECRET_ACCESS_KEY="moto", AWS_ENDPOINT_URL=s3["endpoint"],
               AWS_REGION="us-east-1", COLIO_S3_PART_SIZE=str(PART))
    r = subprocess.run([sys.executable, "-m", "colio", "cp", "-q", str(src), f"s3://{BUCKET}/cp/cli"],
                       env=env, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert stored(s3, "cp/cli") == data
    # A part the server refuses: no object, no upload, a CopyError naming it.
    upload_part_fault(2, 10**6, 400, "InvalidRequest")
    with pytest.raises(CopyError, match="InvalidRequest"):
        copy(str(src), f"s3://{BUCKET}/cp/failed", chunk=MIB, progress_bar=False,
             dst_options=dst_opts)
    assert stored(s3, "cp/failed") is None and open_uploads(s3) == []
