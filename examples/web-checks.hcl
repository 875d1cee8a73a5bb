# A real HTTP service on a dynamic port behind a native service check
# (README, "Services and checks"). Needs python3 on the client's PATH.
job "web" {
  datacenters = ["dc1"]

  update {
    max_parallel      = 1
    canary            = 1
    auto_promote      = true
    auto_revert       = true
    min_healthy_time  = "2s"
    healthy_deadline  = "6s"
    progress_deadline = "10s"
  }

  group "web" {
    count = 2

    network {
      port "http" {}
    }

    service {
      name     = "web"
      port     = "http"
      provider = "nomad"
      tags     = ["v1"]

      check {
        name     = "alive"
        type     = "http"
        path     = "/"
        interval = "2s"
        timeout  = "1s"
      }
    }

    task "srv" {
      driver       = "raw_exec"
      kill_timeout = "2s"

      config {
        command = "python3"
        args    = ["-m", "http.server", "--bind", "${NOMAD_IP_http}", "${NOMAD_PORT_http}"]
      }

      env {
        VERSION = "1"
      }
    }
  }
}
