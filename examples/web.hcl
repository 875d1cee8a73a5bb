# The same job as examples/web.json, in Nomad's HCL2 job syntax:
#   ctlplane job run -output examples/web.hcl   prints the JSON sent.
job "web" {
  datacenters = ["dc1"]
  type        = "service"

  update {
    max_parallel      = 1
    health_check      = "task_states"
    min_healthy_time  = "2s"
    healthy_deadline  = "1m"
    progress_deadline = "2m"
    auto_revert       = true
    canary            = 1
  }

  group "app" {
    count = 3

    restart {
      attempts = 2
      interval = "1m"
      delay    = "1s"
      mode     = "fail"
    }

    reschedule {
      attempts       = 3
      interval       = "1h"
      delay          = "10s"
      delay_function = "exponential"
      max_delay      = "1m"
      unlimited      = false
    }

    migrate {
      max_parallel     = 1
      health_check     = "task_states"
      min_healthy_time = "2s"
      healthy_deadline = "1m"
    }

    task "srv" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"web $NOMAD_ALLOC_INDEX started (version $${VERSION:-1})\"; exec /bin/sleep 3600"]
      }

      env {
        VERSION = "1"
      }

      resources {
        cpu    = 100
        memory = 64
      }

      kill_timeout = "5s"
    }
  }
}
