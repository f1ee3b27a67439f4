{
  "targets": [
    {
      "target_name": "berth_native",
      "sources": ["native/berth_native.c"],
      "cflags": ["-Wall", "-Wextra", "-Werror", "-O2"]
    }
  ]
}
