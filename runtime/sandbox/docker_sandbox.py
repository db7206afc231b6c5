"""The docker backend: one container per sandbox, commands run in it with `exec`.

The container sees nothing of the host but the workspace: its root is the image's (read-only),
the host workspace is bind-mounted read-write at /workspace, /tmp and /dev/shm are tmpfs, and no
other volume, device or socket is given. Its environment is built here (PATH, HOME, TMPDIR,
LANG, TERM and the caller's `env`), never the daemon's. No network (`network_mode="none"`)
unless enabled; memory (no swap), pids and CPU limits; every capability dropped;
no-new-privileges; a non-root user (uid 1000 when temper is root and the workspace is chowned
to it; else the caller's own uid, so host and container share files). The tmpfs mounts are
sized below the memory limit, which their pages count against, so that filling them leaves
room to run. The engine must see the host's filesystem (a local engine: DOCKER_HOST unix socket).

Invariants:
- The docker SDK is blocking: every call runs in `asyncio.to_thread`, never on the event loop.
  It is imported where used (~100 ms), so importing runtime does not pay for it.
- pid 1 is a shell loop that reaps orphans and never exits. Every command is wrapped so that
  when it ends, `kill -9 -1` kills every other process of the sandbox user (all but pid 1 and
  the wrapper itself). On timeout the container is killed and started again (killing pid 1
  kills the whole pid namespace; the workspace is a bind mount and survives, /tmp is emptied).
  So nothing a command started survives it, as with the other backends. A container found
  stopped (the kernel's OOM killer took pid 1) is started again the same way before a command.
- The image must provide /bin/sh and sleep; `.ci/docker-up` builds the default one.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import docker

from runtime.sandbox.base import (
    KILLED_EXIT_CODE,
    BackendStatus,
    CommandResult,
    Sandbox,
    SandboxOptions,
    to_the_end,
)
from runtime.sandbox.errors import SandboxError, SandboxUnavailable
from runtime.sandbox.output import BoundedOutput

CONTAINER_UID = 1000
_KEEPER = "trap 'exit 0' TERM; while :; do sleep 3600 & wait; done"
_WRAPPER = '/bin/sh -c "$1"; status=$?; kill -9 -1 2>/dev/null; exit $status'
_KILL_GRACE_S = 10.0
_SHM_BYTES = 64 << 20
_BUILD_HINT = "build it with .ci/docker-up, or choose another image in [sandbox]"


class DockerSandbox(Sandbox):
    name = "docker"
    workdir = "/workspace"

    @classmethod
    async def probe(cls, options: SandboxOptions) -> BackendStatus:
        try:
            version = await asyncio.to_thread(_check_engine, options.docker_image)
        except SandboxUnavailable as exc:
            return BackendStatus(cls.name, False, str(exc))
        return BackendStatus(cls.name, True, f"engine {version}, image {options.docker_image}")

    def _owner(self) -> tuple[int, int] | None:
        return (CONTAINER_UID, CONTAINER_UID) if os.geteuid() == 0 else None

    async def _boot(self) -> None:
        # Both awaited to their end, a cancellation included, and then undone: a creation left
        # to go on in its thread reached the engine after `start` had removed the root, and the
        # engine made the bind mount's missing source again, as root, and kept the container.
        self._client = await to_the_end(asyncio.ensure_future(asyncio.to_thread(_connect)), undo=_close)
        try:
            self._container: Any = await to_the_end(
                asyncio.ensure_future(asyncio.to_thread(self._create_container)),
                undo=lambda container: asyncio.to_thread(_remove, container),
            )
        except BaseException:
            self._client.close()
            raise

    async def _shutdown(self) -> None:
        try:
            await asyncio.to_thread(_remove, self._container)
        finally:
            self._client.close()

    async def _run(self, command: str, timeout_s: float) -> CommandResult:
        import docker.errors

        started = time.monotonic()
        api = self._client.api
        try:
            exec_id = await asyncio.to_thread(self._exec_create, command)
        except docker.errors.APIError as exc:
            raise SandboxError(f"docker could not run a command: {exc.explanation or exc}") from exc
        output = BoundedOutput(self.options.max_output_bytes)
        pump = asyncio.ensure_future(asyncio.to_thread(_pump, api, exec_id["Id"], output))
        try:
            done, _ = await asyncio.wait({pump}, timeout=timeout_s)
            timed_out = not done
            if timed_out:
                await asyncio.to_thread(self._restart)
                done, _ = await asyncio.wait({pump}, timeout=_KILL_GRACE_S)
                if not done:
                    raise SandboxError(f"container {self._container.short_id}: a command outlived a restart")
            pump.result()
        except BaseException:
            await asyncio.shield(asyncio.to_thread(self._restart))
            raise
        inspected = await asyncio.to_thread(api.exec_inspect, exec_id["Id"])
        return CommandResult(
            command=command,
            exit_code=KILLED_EXIT_CODE if timed_out else int(inspected["ExitCode"]),
            output=output.render(),
            timed_out=timed_out,
            duration_s=time.monotonic() - started,
            output_bytes=output.total_bytes,
            elided_bytes=output.elided_bytes,
        )

    def _exec_create(self, command: str) -> dict[str, str]:
        import docker.errors

        def create() -> dict[str, str]:
            return dict(
                self._client.api.exec_create(
                    self._container.id,
                    ["/bin/sh", "-c", _WRAPPER, "sh", command],
                    workdir=self.workdir,
                    environment=self._environment("/tmp"),
                )
            )

        try:
            return create()
        except docker.errors.APIError as exc:
            if "is not running" not in str(exc):
                raise
        self._restart()  # pid 1 was killed (OOM with full tmpfs): a fresh start, as after a timeout
        return create()

    def _create_container(self) -> Any:
        import docker.errors
        import docker.types

        limits = self.options.limits
        uid, gid = self._owner() or (os.getuid(), os.getgid())
        try:
            container = self._client.containers.create(  # create, not run: run would pull
                self.options.docker_image,
                ["/bin/sh", "-c", _KEEPER],
                user=f"{uid}:{gid}",
                hostname="sandbox",
                network_mode=None if self.options.network else "none",
                read_only=True,
                tmpfs={"/tmp": f"rw,nosuid,nodev,size={limits.memory_bytes // 2}"},
                shm_size=min(_SHM_BYTES, limits.memory_bytes // 8),
                volumes={str(self.workspace): {"bind": self.workdir, "mode": "rw"}},
                working_dir=self.workdir,
                environment=self._environment("/tmp"),
                mem_limit=limits.memory_bytes,
                memswap_limit=limits.memory_bytes,
                pids_limit=limits.pids,
                nano_cpus=int(limits.cpus * 1e9),
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                ulimits=[
                    docker.types.Ulimit(
                        name="fsize", soft=limits.file_size_bytes, hard=limits.file_size_bytes
                    ),
                    docker.types.Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
                    docker.types.Ulimit(name="core", soft=0, hard=0),
                ],
                labels={"temper.sandbox": "1"},
            )
        except docker.errors.ImageNotFound as exc:
            raise SandboxUnavailable(
                f"docker image {self.options.docker_image} not found: {_BUILD_HINT}"
            ) from exc
        except docker.errors.APIError as exc:
            raise SandboxError(
                f"docker could not create a sandbox container: {exc.explanation or exc}"
            ) from exc
        try:
            container.start()
        except docker.errors.APIError as exc:
            container.remove(force=True)
            raise SandboxError(
                f"docker could not start a sandbox container: {exc.explanation or exc}"
            ) from exc
        return container

    def _restart(self) -> None:
        """SIGKILL pid 1, so the kernel kills every process in the container, then start it again.

        Used on timeout instead of an exec: a fork bomb at the pids limit leaves no room to exec.
        """
        import docker.errors

        try:
            self._container.kill()
        except docker.errors.APIError as exc:
            if "is not running" not in str(exc):
                raise SandboxError(f"could not kill container {self._container.short_id}: {exc}") from exc
        self._container.wait()
        self._container.start()


def _remove(container: Any) -> None:
    import docker.errors

    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass  # already gone (removed by hand or by the engine): nothing to release


def _close(client: docker.DockerClient) -> None:
    client.close()


def _connect() -> docker.DockerClient:
    import docker

    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        where = os.environ.get("DOCKER_HOST", "the default socket (DOCKER_HOST is unset)")
        raise SandboxUnavailable(
            f"docker engine not reachable at {where}: {exc}; "
            'start one (e.g. eval "$(.ci/docker-up)") or choose another backend'
        ) from exc
    return client


def _check_engine(image: str) -> str:
    import docker.errors

    client = _connect()
    try:
        version = str(client.version().get("Version", "?"))
        client.images.get(image)
    except docker.errors.ImageNotFound as exc:
        raise SandboxUnavailable(f"docker image {image} not found: {_BUILD_HINT}") from exc
    except docker.errors.DockerException as exc:
        raise SandboxUnavailable(f"docker engine error: {exc}") from exc
    finally:
        client.close()
    return version


def _pump(api: Any, exec_id: str, output: BoundedOutput) -> None:
    """Stream an exec's interleaved stdout/stderr into `output` until it ends (blocking)."""
    for chunk in api.exec_start(exec_id, stream=True, demux=False):
        output.feed(chunk)
