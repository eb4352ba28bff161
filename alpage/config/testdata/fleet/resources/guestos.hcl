guestos_version "current" {
  id      = "2e921c9adfc71f3edc96a9eb5d85fc742e7d8a9f"
  label   = "release-2026-11-20"
  default = true
}

guestos_version "older" {
  id    = "d4ee25b0865e89d3eaac13a60f0016d5e3296b31"
  label = "release-2026-10-30"
}
