"""The jobs API on the API server (SPEC §15): ``GET|POST /api/jobs``, ``GET|PATCH|DELETE
/api/jobs/{id}``, ``POST /api/jobs/{id}/pause|resume|run``.

Registered through ``APIServer.add_routes`` (the server's middleware already checked the key, Host
and Content-Type). Bodies carry the fields of ``cron.jobs.EDITABLE``; refusals are OpenAI-style
errors with the same words as the CLI: 400 bad input, 404 unknown job, 409 a name shared by
several jobs. ``run`` answers 202 at once; the run is delivered like a scheduled one.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable

from aiohttp import web

from cron import jobs
from cron.views import job_view, run_view


def jobs_api(scheduler: Any, policy: Any = None) -> Callable[[Any], None]:
    """A route registrar for the API server, backed by the gateway's scheduler (store, config).
    The key holder sees every job; a job made here records ``policy`` (``cron.policy.RunPolicy``,
    the gateway's limits), so it runs with no more than the gateway's own agents."""
    def register(server: Any) -> None:
        _JobRoutes(scheduler, policy, server).add()

    return register


class _JobRoutes:
    """The handlers of one server's jobs API; each runs the store call off the event loop."""

    def __init__(self, scheduler: Any, policy: Any, server: Any) -> None:
        self.scheduler, self.policy, self.server = scheduler, policy, server
        self.db, self.cfg = scheduler.db, scheduler.cfg

    def add(self) -> None:
        base, add = "/api/jobs", self.server.add_endpoint
        add("jobs_list", "GET", base, self.list_jobs)
        add("jobs_create", "POST", base, self.create)
        add("jobs_get", "GET", base + "/{job_id}", self.get)
        add("jobs_update", "PATCH", base + "/{job_id}", self.patch)
        add("jobs_delete", "DELETE", base + "/{job_id}", self.delete)
        add("jobs_pause", "POST", base + "/{job_id}/pause", self.pause)
        add("jobs_resume", "POST", base + "/{job_id}/resume", self.resume)
        add("jobs_run", "POST", base + "/{job_id}/run", self.run)
        self.server.features["jobs"] = True

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        from gateway.platforms.api_server import APIError
        from hermes_core.config import ConfigError

        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except jobs.JobNotFound as exc:
            raise APIError(404, str(exc), code="job_not_found") from None
        except jobs.AmbiguousJob as exc:
            raise APIError(409, str(exc), code="ambiguous_job") from None
        except jobs.JobError as exc:
            raise APIError(400, str(exc), code="invalid_job") from None
        except ConfigError as exc:
            raise APIError(500, str(exc), "server_error", "config_error") from None

    async def fields(self, request: web.Request) -> dict[str, Any]:
        from gateway.platforms.api_server import APIError, read_json

        body = await read_json(request, self.server.max_body)
        unknown = sorted(set(body) - set(jobs.EDITABLE))
        if unknown:
            raise APIError(400, f"Unknown field(s): {', '.join(unknown)}; a job has "
                                f"{', '.join(jobs.EDITABLE)}.", param=unknown[0])
        return body

    async def list_jobs(self, _request: web.Request) -> web.Response:
        rows = await self.call(self.db.list_cron_jobs)
        return web.json_response({"object": "list", "data": [job_view(j) for j in rows]})

    async def create(self, request: web.Request) -> web.Response:
        body = await self.fields(request)
        job = await self.call(jobs.create_job, self.db, cfg=self.cfg, policy=self.policy, **body)
        return web.json_response(job_view(job), status=201)

    async def get(self, request: web.Request) -> web.Response:
        job = await self.call(jobs.resolve_job, self.db, request.match_info["job_id"])
        runs = await self.call(self.db.list_cron_runs, job["id"], 10)
        return web.json_response(dict(job_view(job), recent_runs=[run_view(r) for r in runs]))

    async def patch(self, request: web.Request) -> web.Response:
        body = await self.fields(request)
        job = await self.call(jobs.update_job, self.db, request.match_info["job_id"],
                              cfg=self.cfg, **body)
        return web.json_response(job_view(job))

    async def delete(self, request: web.Request) -> web.Response:
        job = await self.call(jobs.remove_job, self.db, request.match_info["job_id"])
        return web.json_response({"id": job["id"], "object": "job", "deleted": True})

    async def pause(self, request: web.Request) -> web.Response:
        job = await self.call(jobs.pause_job, self.db, request.match_info["job_id"])
        return web.json_response(job_view(job))

    async def resume(self, request: web.Request) -> web.Response:
        job = await self.call(jobs.resume_job, self.db, request.match_info["job_id"])
        return web.json_response(job_view(job))

    async def run(self, request: web.Request) -> web.Response:
        job = await self.call(jobs.resolve_job, self.db, request.match_info["job_id"])
        started, _future = await self.call(self.scheduler.run_now, job)
        return web.json_response({"object": "job.run", "id": started["run_id"],
                                  "job_id": job["id"], "status": "running",
                                  "deliver": job.get("deliver")}, status=202)
