"""What is fetched and built into the cache, by language: the pinned versions (``pins``), the cache's
set-up lock (``cache``), Maven (``maven``), the JDK (``jdk``), Java programs compiled with javac
(``javac``) and Go modules (``golang``). The parts that use them (Kafka, the proxies, the clients'
bridges, the shipped apps) say what to build; these modules say how."""
