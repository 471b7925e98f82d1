PushworkerDevCLI.tool.run()
