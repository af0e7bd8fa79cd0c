"""Keystone's processes for ``tests.support.keystone``: its venv, a bootstrapped
data template, config files and gunicorn serving the WSGI app."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
ADMIN_PASSWORD = "admin-secret"
REGION = "RegionOne"

# Keystone's oslo.config would parse gunicorn's command line as its own.
_WSGI_SHIM = (
    "import sys\n"
    "sys.argv = sys.argv[:1]\n"
    "from keystone.server import wsgi\n"
    "application = wsgi.initialize_public_application()\n"
)


def keystone_venv() -> Path:
    """The venv with keystone and gunicorn, installed if missing or outdated."""
    venv = Path(os.environ.get("KEYSTONE_VENV", ROOT / "var" / "keystone-venv"))
    env = dict(os.environ, KEYSTONE_VENV=str(venv))
    subprocess.run([str(ROOT / "scripts" / "install-keystone.sh")], check=True, env=env)
    return venv


class Server:
    """One gunicorn process serving Keystone from a config directory."""

    def __init__(self, bin_dir: Path, config_dir: Path, port: int) -> None:
        self.bin_dir = bin_dir
        self.config_dir = config_dir
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.config_dir / "gunicorn.log"

    def start(self) -> None:
        env = dict(
            os.environ,
            OS_KEYSTONE_CONFIG_DIR=str(self.config_dir),
            OS_KEYSTONE_CONFIG_FILES=str(self.config_dir / "keystone.conf"),
        )
        command = [
            str(self.bin_dir / "gunicorn"),
            "--pythonpath", str(self.config_dir),
            "--bind", f"127.0.0.1:{self.port}",
            "--workers", "1", "--threads", "8",
            "--timeout", "120", "--graceful-timeout", "5",
            "keystone_wsgi:application",
        ]  # fmt: skip
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(
                command, env=env, stdout=output, stderr=subprocess.STDOUT
            )
        self._wait_until_up()

    def _wait_until_up(self, timeout: float = 90) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"keystone exited:\n{self.log.read_text()[-3000:]}")
            with suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{self.port}/v3", timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"keystone did not answer within {timeout}s: {self.log}")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


def write_config(config_dir: Path, data_dir: Path, token_expiration: int) -> None:
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "keystone_wsgi.py").write_text(_WSGI_SHIM)
    # Every key repository points into the temp dir: the defaults are under /etc.
    (config_dir / "keystone.conf").write_text(
        f"[DEFAULT]\nlog_file = {config_dir / 'keystone.log'}\n"
        f"[database]\nconnection = sqlite:///{data_dir / 'keystone.db'}\n"
        f"[fernet_tokens]\nkey_repository = {data_dir / 'fernet-keys'}\n"
        f"[fernet_receipts]\nkey_repository = {data_dir / 'fernet-keys'}\n"
        f"[credential]\nkey_repository = {data_dir / 'credential-keys'}\n"
        f"[token]\nexpiration = {token_expiration}\n"
        # bcrypt's fewest rounds: users and password tokens are made in bulk.
        "[identity]\npassword_hash_rounds = 4\n"
    )


def _manage(bin_dir: Path, config_dir: Path, *args: str) -> subprocess.Popen[bytes]:
    command = [
        str(bin_dir / "keystone-manage"),
        "--config-file",
        str(config_dir / "keystone.conf"),
        *args,
    ]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _wait_all(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        output, _ = process.communicate(timeout=180)
        if process.returncode != 0:
            raise RuntimeError(f"{process.args!r} failed:\n{output.decode()[-3000:]}")


# The URL bootstrap writes into a template's catalog; replaced when it runs.
_TEMPLATE_URL = "http://127.0.0.1:9/v3"
_DATA = ("keystone.db", "fernet-keys", "credential-keys")


def _template(bin_dir: Path) -> Path:
    """A bootstrapped data directory, made once per Keystone install and copied.

    keystone-manage's four steps take 10-30 s; a copy takes milliseconds.
    """
    venv = bin_dir.parent
    stamp = (venv / ".installed").read_text().strip()[:16]
    template = venv.parent / f"keystone-template-{stamp}"
    if (template / "keystone.db").exists():
        return template
    build = Path(tempfile.mkdtemp(prefix="keystone-template-", dir=venv.parent))
    write_config(build / "main", build, 3600)
    _set_up(bin_dir, build / "main", _TEMPLATE_URL)
    shutil.rmtree(build / "main")
    try:
        build.rename(template)
    except OSError:
        # Another process made it first; theirs is as good.
        shutil.rmtree(build, ignore_errors=True)
    return template


def _set_up(bin_dir: Path, config_dir: Path, url: str) -> None:
    owner = ["--keystone-user", str(os.getuid()), "--keystone-group", str(os.getgid())]
    # The three are independent; run side by side they save a few seconds.
    _wait_all(
        [
            _manage(bin_dir, config_dir, "db_sync"),
            _manage(bin_dir, config_dir, "fernet_setup", *owner),
            _manage(bin_dir, config_dir, "credential_setup", *owner),
        ]
    )
    bootstrap = [
        "bootstrap",
        "--bootstrap-password", ADMIN_PASSWORD,
        "--bootstrap-username", "admin",
        "--bootstrap-project-name", "admin",
        "--bootstrap-role-name", "admin",
        "--bootstrap-service-name", "keystone",
        "--bootstrap-region-id", REGION,
        "--bootstrap-public-url", url,
        # keystonemiddleware looks Keystone up at the internal interface.
        "--bootstrap-internal-url", url,
    ]  # fmt: skip
    _wait_all([_manage(bin_dir, config_dir, *bootstrap)])


def copy_template(bin_dir: Path, data_dir: Path) -> None:
    """A bootstrapped Keystone's database and keys into ``data_dir``."""
    template = _template(bin_dir)
    for name in _DATA:
        copy = shutil.copytree if (template / name).is_dir() else shutil.copy2
        copy(template / name, data_dir / name)
