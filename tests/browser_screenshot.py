"""Screenshots of web pages (Prometheus' graph page) with Debian's headless Chromium.

Chromium runs with a fresh profile in a temporary directory, no GPU, no sandbox
(root in CI), no background networking, and a virtual-time budget so the page's
JavaScript finishes its queries and draws before the shot is taken. Install the
browser with `deploy/prometheus/install-tools.sh chromium`.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class ScreenshotError(RuntimeError):
    """Chromium is missing or did not write the picture."""


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def screenshot(url: str, png: Path, *, width: int = 1400, height: int = 900,
               virtual_time_budget_ms: int = 10_000, timeout_s: float = 90.0,
               binary: str | None = None) -> Path:
    """Load `url` headless and write a PNG of the window to `png`."""
    binary = binary or chromium_binary()
    if binary is None:
        raise ScreenshotError("chromium is not installed; run deploy/prometheus/install-tools.sh chromium")
    png = Path(png).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    profile = Path(tempfile.mkdtemp(prefix="croupier-chromium-"))
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
           f"--user-data-dir={profile}", f"--window-size={width},{height}",
           f"--virtual-time-budget={virtual_time_budget_ms}", f"--screenshot={png}", url]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise ScreenshotError(f"chromium timed out after {timeout_s:.0f}s on {url}") from exc
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if not png.exists() or not png.read_bytes().startswith(PNG_MAGIC):
        raise ScreenshotError(f"chromium wrote no PNG (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return png
