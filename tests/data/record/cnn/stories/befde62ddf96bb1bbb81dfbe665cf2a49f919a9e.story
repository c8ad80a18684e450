Helsinki, Finland (CNN)Dense fog delayed ferries between Helsinki and Tallinn on Friday, stranding hundreds of passengers at both terminals.

Services resumed in the afternoon, operator Baltic Crossway Lines said.

@highlight

Fog delayed ferries between Helsinki and Tallinn

@highlight

Services resumed in the afternoon