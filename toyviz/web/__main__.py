from toyviz.web.export import main

main()
