"""Where decode jobs run: in the API process, or on model workers of a Ray Serve deployment.

- :mod:`inference.workers.job`: the job (a plan as plain data), its reply,
  their msgpack codec and :func:`~inference.workers.job.execute`, the one call
  that decodes a job on a reasoner (in process or on a worker);
- :mod:`inference.workers.replica`: one model worker (model, micro-batcher,
  prefix cache), free of Ray;
- :mod:`inference.workers.ray_replica`: the Ray Serve deployment of that worker
  (needs the ``ray`` extra);
- :mod:`inference.workers.ray_serve`: the client that sends jobs to it, with
  back-pressure, session affinity, the one retry and readiness.
"""

from inference.workers.job import DecodeJob, WorkerReply, execute

__all__ = ["DecodeJob", "WorkerReply", "execute"]
