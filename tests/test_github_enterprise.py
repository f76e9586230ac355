"""GitHub Enterprise Server: the API base URL's path (``https://HOST/api/v3``) is kept on
every request perfbot makes: the App's own, the token exchange and an installation's."""

from __future__ import annotations

import httpx

from perfbot.app.settings import Settings
from perfbot.github.app import GitHubApp
from perfbot.sandbox.fakegithub import FakeGitHub, rsa_keypair

HOST = "https://ghes.example.com"
PREFIX = "/api/v3"


class UnderPrefix(httpx.AsyncBaseTransport):
    """The fake GitHub as a server's API under ``PREFIX``: a request without it is not found
    (as on the appliance, where ``/app`` is the web interface), one with it goes to the fake
    with the prefix removed."""

    def __init__(self, fake: FakeGitHub) -> None:
        self._inner = fake.transport()
        self.paths: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.paths.append(path)
        if not path.startswith(PREFIX + "/"):
            return httpx.Response(404, json={"message": "Not Found"})
        request.url = request.url.copy_with(path=path.removeprefix(PREFIX))
        return await self._inner.handle_async_request(request)


async def test_every_request_keeps_the_servers_api_path() -> None:
    fake = FakeGitHub(api_url=HOST)
    fake.add_installation(7, "octo-org")
    fake.add_repo("octo-org/app", 70, 7)
    settings = Settings.from_env(
        {
            "PERFBOT_APP_ID": str(fake.app_id),
            "PERFBOT_PRIVATE_KEY": rsa_keypair().private_pem,
            "PERFBOT_WEBHOOK_SECRET": "s3cret",
            "PERFBOT_GITHUB_URL": f"{HOST}{PREFIX}/",
        }
    )
    assert settings.github_url == f"{HOST}{PREFIX}"
    transport = UnderPrefix(fake)
    app = GitHubApp(settings.app_id, settings.private_key, settings.github_url, transport=transport)
    try:
        assert await app.bot_login() == f"{fake.app_slug}[bot]"
        async with app.installation(7) as installation:
            assert await installation.get_pull("octo-org", "app", 404) is None
    finally:
        await app.close()
    assert f"{PREFIX}/app" in transport.paths
    assert f"{PREFIX}/app/installations/7/access_tokens" in transport.paths
    assert f"{PREFIX}/repos/octo-org/app/pulls/404" in transport.paths
    assert all(path.startswith(PREFIX + "/") for path in transport.paths), transport.paths
